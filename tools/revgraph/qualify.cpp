// revgraph qualify: SPEC §9's protocol — 11 MNIST-medium draws, correct counts per draw, the
// total against the error band, and the per-draw floor 1.5 points below the band.
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include "engine/backends.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/idx.hpp"
#include "engine/task.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"
#include "tools/revgraph/official_set.hpp"

namespace revgraph::cli {

int qualify_command(const std::vector<std::string>& argv) {
    auto options = kTaskOptions;
    options.insert({"idx-dir", "band", "first-seed", "draws", "output"});
    auto flags = kTaskFlags;
    flags.insert({"quiet", "together"});
    const Args args(argv, options, flags);
    if (!args.positional().empty()) throw UsageError{"qualify: unexpected argument '" + args.positional()[0] + "'"};
    const auto dir = args.get("idx-dir");
    if (!dir) throw UsageError{"qualify: --idx-dir DIR is required"};
    const double band = args.get("band") ? parse_double("band", *args.get("band")) : 12.0;
    if (band <= 0 || band >= 100) throw UsageError{"qualify: --band must be a percentage in (0, 100)"};
    const std::uint64_t first = args.get("first-seed")
                                    ? static_cast<std::uint64_t>(parse_int("first-seed", *args.get("first-seed"), 0, INT64_MAX))
                                    : 2026091400ull;
    const int draws = args.get("draws") ? static_cast<int>(parse_int("draws", *args.get("draws"), 1, 1000)) : 11;
    if (const auto out = args.get("output")) require_distinct_writable_outputs({{"--output", *out}});
    const TaskConfig config = config_from(args);
    configure_runtime(args);
    const std::string backend = args.get("backend").value_or("auto");
    const bool quiet = args.flag("quiet");
    const bool together = args.flag("together");  // every draw at once (PreparedTask::run_together)

    const auto set = read_official_training_set(*dir);
    const std::int64_t per_draw = data::kMediumTest;
    const std::int64_t total_needed = static_cast<std::int64_t>(std::ceil((100.0 - band) / 100.0 * per_draw * draws - 1e-9));
    const std::int64_t floor_needed = static_cast<std::int64_t>(std::ceil((100.0 - band - 1.5) / 100.0 * per_draw - 1e-9));

    nlohmann::ordered_json report;
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
        auto d = data::mnist_medium_draw(set.images.pixels, set.labels, seed);
        auto task = std::make_unique<PreparedTask>(TaskInputs{std::move(d.train_images), std::move(d.train_labels),
                                                              std::move(d.test_images)},
                                                   config, make_backend(backend));
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
    report["passed"] = passed;
    const std::string text = report.dump(2) + "\n";
    if (const auto out = args.get("output")) io::write_file_atomic(*out, text);
    else write_stdout(text);
    std::cerr << "revgraph: qualify " << (passed ? "passed" : "FAILED") << ": " << total << " / " << per_draw * draws
              << " correct (needed " << total_needed << ", per-draw floor " << floor_needed << ")\n";
    return passed ? 0 : 3;
}

}  // namespace revgraph::cli
