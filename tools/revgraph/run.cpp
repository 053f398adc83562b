// revgraph run: one task, start to finish, on a chosen backend; results written all-or-none.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/sha256.hpp"
#include "engine/qualify/protocol.hpp"
#include "engine/task_files.hpp"
#include "engine/stats.hpp"
#include "engine/task.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {
namespace {

struct RunOptions {
    TaskOptions task;
    std::optional<std::string> input, test_labels, output, state, scores;
    std::string repeat = "1";
    bool quiet = false;
    bool timings = false;  // run_seconds is always recorded now; the flag stays for older scripts
    bool emulate = false;  // the GPU backend's launch plan, run on the CPU
};

// Refuse to start a long run whose outputs could not be written anyway.
void require_writable_outputs(const RunOptions& o) {
    NamedPaths targets;
    if (o.output) {
        targets.push_back({"--output", *o.output});
        // "--output r.json's predictions file r.predictions.npy ...": the path is that file's, not --output's.
        targets.push_back({"--output " + *o.output + "'s predictions file", predictions_path_for(*o.output).string()});
    }
    if (o.state) targets.push_back({"--state", *o.state});
    if (o.scores) targets.push_back({"--scores", *o.scores});
    NamedPaths inputs = config_inputs(o.task);  // none of which an output may replace
    if (o.input) inputs.push_back({"--input", *o.input});
    if (o.test_labels) inputs.push_back({"--test-labels", *o.test_labels});
    require_distinct_writable_outputs(targets, inputs);
}

// --input (with --test-labels), or the embedded digits.
LabelledTask load_task(const RunOptions& o) {
    if (!o.input) return embedded_task();
    LabelledTask task;
    task.inputs = read_task_inputs(*o.input);
    task.source = *o.input;
    if (o.test_labels) task.test_labels = read_labels(*o.test_labels, task.inputs.test_count());
    return task;
}

struct Repeats {
    std::vector<double> run_seconds;  // every run's time, in order
    bool last_differs = false;        // the last run's bytes are not the first run's
};

// `repeat` runs of the prepared task. Epoch progress for the last run only (the one whose outputs
// are written), timed from that run's own start. With repeat > 1 the first and the last run's final
// states are read back (untimed) and held to each other, byte for byte: --repeat is also the replay
// check. Only those two, so that the runs between follow each other as a benchmark's do
// (compare_torch times `run --repeat`), and whatever a run left behind would show in the last.
Repeats run_repeats(PreparedTask& prepared, int repeat, bool quiet) {
    const int epochs = prepared.config().epochs;
    const bool asynchronous = prepared.backend().asynchronous();
    const std::string of_run = repeat > 1 ? " of run " + std::to_string(repeat) + "/" + std::to_string(repeat) : "";
    Repeats out;
    std::vector<double>& run_seconds = out.run_seconds;
    TaskState first;
    for (int r = 0; r < repeat; ++r) {
        const bool report = !quiet && r == repeat - 1;
        const auto start = std::chrono::steady_clock::now();
        prepared.run([&](int e) {
            if (!report) return;
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::cerr << "revgraph: epoch " << (e + 1) << "/" << epochs << of_run << " "
                      << (asynchronous ? "enqueued" : "done") << " at " << ms << " ms\n";
        });
        run_seconds.push_back(prepared.last_run_seconds());
        if (!quiet && repeat > 1)
            std::cerr << "revgraph: run " << (r + 1) << "/" << repeat << ": " << run_seconds.back() * 1e3 << " ms\n";
        if (repeat == 1 || (r != 0 && r != repeat - 1)) continue;
        TaskState state = prepared.backend().read_state();
        if (r == 0)
            first = std::move(state);
        else
            out.last_differs = !same_outputs(state, first);
    }
    return out;
}

void print_summary(const std::vector<double>& run_seconds, const nlohmann::ordered_json& m) {
    if (const Summary times = summarize(run_seconds); times.runs > 1)
        std::cerr << "revgraph: " << times.runs << " runs: median " << times.median * 1e3 << " ms, min "
                  << times.min * 1e3 << " ms, max " << times.max * 1e3 << " ms";
    else
        std::cerr << "revgraph: run " << run_seconds.back() * 1e3 << " ms";
    if (m.contains("accuracy"))
        std::cerr << ", accuracy " << std::setprecision(2) << m["accuracy"].get<double>() * 100 << "%"
                  << std::setprecision(1);
    std::cerr << "\n";
}

// Every output at once; the result file (--output) is the commit point, written last after the
// files it names. Without --output the result goes to stdout.
void write_outputs(const RunOptions& o, const PreparedTask& prepared, TaskOutputs& out) {
    auto& m = out.metadata;
    std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>> files;
    if (o.state) {
        m["state_file"] = std::filesystem::path(*o.state).filename().string();
        files.push_back({*o.state, io::serialize_npz(state_archive(prepared.layout(), out.state))});
    }
    if (o.scores) {
        m["scores_file"] = std::filesystem::path(*o.scores).filename().string();
        files.push_back({*o.scores, io::serialize_npy(scores_array(out.state.scores))});
    }
    if (o.output) {
        const auto predictions = predictions_path_for(*o.output);
        m["predictions_file"] = predictions.filename().string();
        files.push_back({predictions, io::serialize_npy(predictions_array(out.state.predictions))});
        const std::string text = m.dump(2) + "\n";
        io::write_result_set(*o.output, std::vector<std::uint8_t>(text.begin(), text.end()), files);
        return;
    }
    if (!files.empty()) io::write_files_atomic(files);
    write_stdout(m.dump(2) + "\n");
}

int run_command(const RunOptions& o) {
    std::cerr << std::fixed << std::setprecision(1);
    const int repeat = static_cast<int>(parse_int("repeat", o.repeat, 1, 100000));
    if (o.test_labels && !o.input) throw UsageError{"run: --test-labels needs --input"};
    require_writable_outputs(o);
    const TaskConfig config = config_from(o.task);
    if (o.emulate) {  // before any work: --emulate names a GPU backend, and nothing runs on a GPU
        if (o.task.device || o.task.pdl || o.task.no_pdl)
            throw UsageError{"run: --emulate runs on the CPU: drop --device, --pdl and --no-pdl"};
        make_emulated_backend(o.task.backend, "--emulate");
        configure_runtime(o.task);  // --cluster-blocks: the emulated plan runs the cluster launch too
    } else {
        refuse_gpu_options_on_cpu(o.task);
        configure_runtime(o.task);
    }

    LabelledTask task = load_task(o);
    PreparedTask prepared(
        std::move(task.inputs), config,
        o.emulate ? make_emulated_backend(o.task.backend, "--emulate") : make_backend(o.task.backend, config));
    if (!o.quiet)
        std::cerr << "revgraph: " << prepared.inputs().train_count() << " train / " << prepared.inputs().test_count()
                  << " query, depth " << config.depth << ", width " << config.width << ", " << config.epochs
                  << " epochs, batch " << config.batch_size << " on " << prepared.backend().name() << " ("
                  << prepared.backend().device() << "); prepared in " << prepared.preparation_seconds() * 1e3
                  << " ms\n";

    const Repeats repeats = run_repeats(prepared, repeat, o.quiet);
    const std::vector<double>& run_seconds = repeats.run_seconds;
    TaskOutputs out = prepared.outputs(run_seconds);
    auto& m = out.metadata;
    m["input"] = task.source;
    if (repeat > 1) m["replays_byte_identical"] = !repeats.last_differs;
    if (!task.test_labels.empty()) {
        const std::int64_t correct = qualify::correct_count(out.state.predictions, task.test_labels);
        m["correct"] = correct;
        m["accuracy"] = double(correct) / double(task.test_labels.size());
    }
    if (!o.quiet) print_summary(run_seconds, m);
    // Even with --quiet: a run that diverged is not a result to use unknowingly.
    if (const std::string w =
            divergence_warning(m["non_finite_score_rows"].get<std::int64_t>(), prepared.inputs().test_count());
        !w.empty())
        std::cerr << "revgraph: warning: " << w << "\n";
    write_outputs(o, prepared, out);
    // Written all the same (the last run's bytes, and the key saying they are not every run's): a
    // replay that differs is an engine bug to report, with its evidence.
    if (repeats.last_differs)
        throw Error("run: run " + std::to_string(repeat) + " of " + std::to_string(repeat) +
                    " left other bytes than run 1 (parameters, velocity, scores or predictions): replays must be "
                    "byte-identical");
    return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* sub = app.add_subcommand("run", "train a fresh model from its seed and predict the query images");
    sub->add_option("--input", o->input,
                    "the task: train_images, train_labels, test_images (see `data`); without it, the embedded "
                    "real digits (5,000 train / 5,000 held-out query), and the result reports accuracy")
        ->type_name("DRAW.npz")
        ->check(kNonEmpty);
    sub->add_option("--test-labels", o->test_labels, "query labels, to report accuracy (needs --input)")
        ->type_name("LABELS.npy")
        ->check(kNonEmpty);
    sub->add_option("--output", o->output,
                    "the result (else to stdout), with its predictions beside it in <stem>.predictions.npy")
        ->type_name("RESULT.json")
        ->check(kNonEmpty);
    sub->add_option("--state", o->state, "the final parameters and velocities")
        ->type_name("STATE.npz")
        ->check(kNonEmpty);
    sub->add_option("--scores", o->scores, "the query scores, float32 (Q, 10), whose hash is scores_sha256")
        ->type_name("SCORES.npy")
        ->check(kNonEmpty);
    sub->add_option("--repeat", o->repeat,
                    "train N times from the same seed; training_prediction_seconds is then the median, run_seconds "
                    "every run's time, and the last run's bytes are held to the first's (replays_byte_identical; "
                    "exit 1 where they differ) (default 1)")
        ->type_name("N")
        ->check(kNonEmpty);
    add_task_options(*sub, o->task);
    sub->add_flag("--emulate", o->emulate,
                  "run the GPU backend named by --backend (cuda, cuda-fused) as its launch plan on the CPU: slow, "
                  "and for cuda-fused the outputs and hashes the device writes, on any machine");
    sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
    sub->add_flag("--timings", o->timings, "(kept for older scripts: run_seconds is always in the result)");
    sub->footer(config_keys_help());
    return {sub, [o] { return run_command(*o); }};
}

}  // namespace revgraph::cli
