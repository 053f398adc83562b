// revgraph run: one task, start to finish, on a chosen backend; results written all-or-none.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>

#include "engine/backends.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/task_files.hpp"
#include "engine/task.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

int run_command(const std::vector<std::string>& argv) {
    auto options = kTaskOptions;
    options.insert({"input", "test-labels", "output", "state", "repeat"});
    auto flags = kTaskFlags;
    flags.insert({"quiet", "timings"});
    const Args args(argv, options, flags);
    if (!args.positional().empty()) throw UsageError{"run: unexpected argument '" + args.positional()[0] + "'"};
    const bool quiet = args.flag("quiet");
    std::cerr << std::fixed << std::setprecision(1);
    const int repeat = args.get("repeat") ? static_cast<int>(parse_int("repeat", *args.get("repeat"), 1, 100000)) : 1;
    if (args.get("test-labels") && !args.get("input")) throw UsageError{"run: --test-labels needs --input"};

    // Refuse to start a long run whose outputs could not be written anyway.
    const auto output = args.get("output");
    const auto state_path = args.get("state");
    {
        std::vector<std::pair<std::string, std::string>> targets;
        if (output) {
            targets.push_back({"--output", *output});
            targets.push_back({"the predictions file of --output", io::predictions_path_for(*output).string()});
        }
        if (state_path) targets.push_back({"--state", *state_path});
        std::vector<std::pair<std::string, std::string>> inputs;
        for (const char* name : {"input", "test-labels", "config"})
            if (const auto path = args.get(name)) inputs.push_back({std::string("--") + name, *path});
        require_distinct_writable_outputs(targets, inputs);
    }
    const TaskConfig config = config_from(args);
    configure_runtime(args);

    LabelledTask task;
    if (const auto input = args.get("input")) {
        task.inputs = io::read_task_inputs(*input);
        task.source = *input;
        if (const auto labels = args.get("test-labels"))
            task.test_labels = io::read_labels(*labels, task.inputs.test_count());
    } else {
        task = embedded_task();
    }
    const std::string backend_name = args.get("backend").value_or("auto");
    PreparedTask prepared(std::move(task.inputs), config, make_backend(backend_name));
    if (!quiet)
        std::cerr << "revgraph: " << prepared.inputs().train_count() << " train / " << prepared.inputs().test_count()
                  << " query, depth " << config.depth << ", " << config.epochs << " epochs, batch "
                  << config.batch_size << " on " << prepared.backend().name() << " (" << prepared.backend().device()
                  << "); prepared in " << prepared.preparation_seconds() * 1e3 << " ms\n";

    const auto start = std::chrono::steady_clock::now();
    std::vector<double> run_seconds;  // every run's time, for --timings (bench/compare)
    for (int r = 0; r < repeat; ++r) {
        const bool report = !quiet && r == repeat - 1;
        prepared.run([&](int e) {
            if (!report) return;
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::cerr << "revgraph: epoch " << (e + 1) << "/" << config.epochs << " "
                      << (prepared.backend().name().rfind("cuda", 0) == 0 ? "enqueued" : "done") << " at "
                      << ms << " ms\n";
        });
        run_seconds.push_back(prepared.last_run_seconds());
    }
    TaskOutputs out = prepared.outputs();
    auto& m = out.metadata;
    if (args.flag("timings")) m["run_seconds"] = run_seconds;
    m["input"] = task.source;
    if (!task.test_labels.empty()) {
        m["correct"] = correct_count(out.state.predictions, task.test_labels);
        m["accuracy"] = accuracy(out.state.predictions, task.test_labels);
    }
    if (!quiet) {
        std::cerr << "revgraph: run " << prepared.last_run_seconds() * 1e3 << " ms";
        if (m.contains("accuracy"))
            std::cerr << ", accuracy " << std::setprecision(2) << m["accuracy"].get<double>() * 100 << "%"
                      << std::setprecision(1);
        std::cerr << "\n";
    }

    // The result file (--output) is the commit point: written last, after the files it describes.
    std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>> files;
    if (state_path) files.push_back({*state_path, io::serialize_npz(io::state_archive(prepared.layout(), out.state))});
    if (output) {
        const auto predictions = io::predictions_path_for(*output);
        m["predictions_file"] = predictions.filename().string();
        files.push_back({predictions, io::serialize_npy(io::predictions_array(out.state.predictions))});
        const std::string text = m.dump(2) + "\n";
        io::write_result_set(*output, std::vector<std::uint8_t>(text.begin(), text.end()), files);
    } else if (!files.empty()) {
        io::write_files_atomic(files);
    }
    if (!output) write_stdout(m.dump(2) + "\n");
    return 0;
}

}  // namespace revgraph::cli
