// revgraph qualify: docs/spec.md §9's protocol — 11 MNIST-medium draws, correct counts per draw, the
// total against the error band, and the per-draw floor 1.5 points below the band.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>
#include <iostream>
#include <memory>
#include <vector>

#include "engine/backends.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/idx.hpp"
#include "engine/io/mnist_official.hpp"
#include "engine/utc_time.hpp"
#include "engine/version.hpp"
#include "engine/task.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"
#include "tools/revgraph/official_set.hpp"

namespace revgraph::cli {

namespace {

struct QualifyOptions {
    TaskOptions task;
    std::optional<std::string> idx_dir, band, first_seed, draws, output;
    bool quiet = false, together = false;
};

int qualify_command(const QualifyOptions& o) {
    const auto& dir = o.idx_dir;
    const double band = o.band ? parse_double("band", *o.band) : 12.0;
    if (band <= 0 || band >= 100) throw UsageError{"qualify: --band must be a percentage in (0, 100)"};
    const std::uint64_t first =
        o.first_seed ? static_cast<std::uint64_t>(parse_int("first-seed", *o.first_seed, 0, INT64_MAX)) : 2026091400ull;
    const int draws = o.draws ? static_cast<int>(parse_int("draws", *o.draws, 1, 1000)) : 11;
    if (const auto& out = o.output) require_distinct_writable_outputs({{"--output", *out}});
    const TaskConfig config = config_from(o.task);
    refuse_gpu_options_on_cpu(o.task);
    configure_runtime(o.task);
    const std::string backend = o.task.backend;
    const bool quiet = o.quiet;
    const bool together = o.together;  // every draw at once (PreparedTask::run_together)

    const auto set = read_official_training_set(*dir);
    const auto idx_checks = check_official_mnist(set);
    const data::DrawSource source(set.images.pixels, set.labels);  // each image resized at most once
    const bool official = std::all_of(idx_checks.begin(), idx_checks.end(), [](const auto& c) { return c.official; });
    const std::int64_t per_draw = data::kMediumTest;
    const std::int64_t total_needed =
        static_cast<std::int64_t>(std::ceil((100.0 - band) / 100.0 * per_draw * draws - 1e-9));
    const std::int64_t floor_needed =
        static_cast<std::int64_t>(std::ceil((100.0 - band - 1.5) / 100.0 * per_draw - 1e-9));

    nlohmann::ordered_json report;
    report["official_mnist"] = official;
    report["idx_files"] = {{"train_images", idx_checks[0].to_json()}, {"train_labels", idx_checks[1].to_json()}};
    report["revgraph_version"] = version();
    report["git_commit"] = git_commit();
    report["config"] = config.to_json();
    report["band_percent"] = band;
    report["together"] = together;
    report["draws"] = nlohmann::ordered_json::array();
    std::int64_t total = 0;
    bool floor_ok = true;
    double run_ms = 0;
    struct Draw {
        std::uint64_t seed;
        std::vector<std::int64_t> test_labels;
        std::unique_ptr<PreparedTask> task;
    };
    const auto prepare = [&](int i) {
        const std::uint64_t seed = first + static_cast<std::uint64_t>(i);
        auto d = source.mnist_medium_draw(seed);
        auto task = std::make_unique<PreparedTask>(
            TaskInputs{std::move(d.train_images), std::move(d.train_labels), std::move(d.test_images)}, config,
            make_backend(backend));
        return Draw{seed, std::move(d.test_labels), std::move(task)};
    };
    const auto score = [&](Draw& draw) {
        PreparedTask& task = *draw.task;
        const std::uint64_t seed = draw.seed;
        const auto& test_labels = draw.test_labels;
        const auto out = task.outputs();
        const auto correct = correct_count(out.state.predictions, test_labels);
        total += correct;
        floor_ok = floor_ok && correct >= floor_needed;
        run_ms += task.last_run_seconds() * 1e3;
        report["draws"].push_back({{"seed", seed},
                                   {"correct", correct},
                                   {"test_count", static_cast<std::int64_t>(test_labels.size())},
                                   {"predictions_sha256", out.metadata["predictions_sha256"]},
                                   {"training_prediction_seconds", task.last_run_seconds()},
                                   {"backend", task.backend().name()}});
        if (!quiet)
            std::cerr << "revgraph: draw " << seed << ": " << correct << " / " << test_labels.size() << " correct\n";
        draw.task.reset();  // its buffers, host and device, go now
    };
    if (together) {
        std::vector<Draw> all;
        std::vector<PreparedTask*> tasks;
        for (int i = 0; i < draws; ++i) {
            all.push_back(prepare(i));
            tasks.push_back(all.back().task.get());
        }
        PreparedTask::run_together(tasks);
        for (Draw& d : all) score(d);
    } else {
        for (int i = 0; i < draws; ++i) {
            Draw d = prepare(i);
            d.task->run();
            score(d);
        }
    }
    const bool passed = total >= total_needed && floor_ok;
    report["total_correct"] = total;
    report["total_count"] = per_draw * draws;
    report["total_needed"] = total_needed;
    report["per_draw_floor"] = floor_needed;
    report["accuracy"] = double(total) / double(per_draw * draws);
    report["mean_training_prediction_ms"] = run_ms / draws;
    report_official_mnist(idx_checks, quiet);  // at the end, so that an error before stays one line
    report["passed"] = passed;
    // A qualification is the band passed on the official files; a made-up IDX set never is one.
    report["qualified"] = passed && official;
    report["created_utc"] = utc_timestamp();
    const std::string text = report.dump(2) + "\n";
    if (const auto& out = o.output)
        io::write_file_atomic(*out, text);
    else
        write_stdout(text);
    std::cerr << "revgraph: qualify " << (passed ? "passed" : "FAILED") << ": " << total << " / " << per_draw * draws
              << " correct (needed " << total_needed << ", per-draw floor " << floor_needed << ")"
              << (official ? "" : "; NOT a qualification: the IDX files are not the official MNIST ones") << "\n";
    return passed ? 0 : 3;
}

}  // namespace

Command add_qualify_command(CLI::App& app) {
    auto o = std::make_shared<QualifyOptions>();
    CLI::App* sub = app.add_subcommand(
        "qualify",
        "the 11-draw qualification protocol on the official MNIST training IDX files: correct counts per "
        "draw, the total against the error band, the per-draw floor 1.5 points below it");
    sub->add_option("--idx-dir", o->idx_dir,
                    "holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (or uncompressed); only the "
                    "official gzip files make a qualification (official_mnist in the report)")
        ->type_name("DIR")
        ->required()
        ->check(kNonEmpty);
    sub->add_option("--band", o->band, "the error band in percent (default 12)")
        ->type_name("PERCENT")
        ->check(kNonEmpty);
    sub->add_option("--first-seed", o->first_seed, "the first draw's seed; the others follow (default 2026091400)")
        ->type_name("S")
        ->check(kNonEmpty);
    sub->add_option("--draws", o->draws, "how many draws (default 11)")->type_name("N")->check(kNonEmpty);
    sub->add_option("--output", o->output, "the report (else to stdout)")->type_name("Q.json")->check(kNonEmpty);
    add_task_options(*sub, o->task);
    sub->add_flag("--together", o->together, "run every draw at once (each on its own GPU stream, or CPU thread)");
    sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
    sub->footer(config_keys_help() + "\nExit status 3: below the band or a draw below the floor.");
    return {sub, [o] { return qualify_command(*o); }};
}

}  // namespace revgraph::cli
