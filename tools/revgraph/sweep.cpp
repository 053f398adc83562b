// revgraph sweep: a grid of configs (seeds × depth × ...) as concurrent tasks, one JSON line per
// point (engine/sweep/); revgraph sweep merge: shards back into the unsharded sweep's file.
#include "tools/revgraph/sweep.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/task_files.hpp"
#include "engine/sweep/grid.hpp"
#include "engine/sweep/jsonl.hpp"
#include "engine/sweep/progress.hpp"
#include "engine/sweep/runner.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {
namespace {

// Grid and shard mistakes are usage errors (exit 2).
template <typename Fn>
auto usage_checked(const Fn& fn) {
    try {
        return fn();
    } catch (const sweep::UsageProblem& e) { throw UsageError{e.what()}; }
}

// Progress on stderr: a bar redrawn in place at most 10 times a second on a terminal, a plain
// line at most every 10 seconds otherwise; the last state always.
class ProgressPrinter {
public:
    explicit ProgressPrinter(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1) {}
    void operator()(const sweep::Progress& p) {
        if (quiet_) return;
        const auto now = std::chrono::steady_clock::now();
        const bool last = p.done == p.total;
        const double since = std::chrono::duration<double>(now - last_).count();
        if (!last && printed_ && since < (tty_ ? 0.1 : 10.0)) return;
        last_ = now;
        printed_ = true;
        if (tty_)
            std::cerr << "\r" << sweep::progress_bar(p) << "\x1b[K" << (last ? "\n" : "") << std::flush;
        else
            std::cerr << "revgraph: " << sweep::progress_line(p) << "\n" << std::flush;
    }

private:
    bool quiet_, tty_, printed_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int sweep(const SweepOptions& o) {
    if (o.output.empty()) throw UsageError{"sweep: --output SWEEP.jsonl is required"};
    if (o.test_labels && !o.input) throw UsageError{"sweep: --test-labels needs --input"};
    NamedPaths inputs;
    if (o.input) inputs.push_back({"--input", *o.input});
    if (o.test_labels) inputs.push_back({"--test-labels", *o.test_labels});
    if (o.config_file) inputs.push_back({"--config", *o.config_file});
    require_distinct_writable_outputs({{"--output", o.output}}, inputs);
    const sweep::Grid grid = usage_checked([&] { return sweep::Grid::parse(o.base, o.grid); });
    const sweep::Shard shard = o.shard ? usage_checked([&] { return sweep::parse_shard(*o.shard); }) : sweep::Shard{};

    LabelledTask task;
    if (o.input) {
        task.inputs = read_task_inputs(*o.input);
        if (o.test_labels) task.test_labels = read_labels(*o.test_labels, task.inputs.test_count());
    } else {
        task = embedded_task();
    }
    sweep::SweepJob job;
    job.inputs = &task.inputs;
    job.test_labels = task.test_labels;
    job.grid = grid;
    job.shard = shard;
    job.jobs = o.jobs;
    job.backend = o.backend;
    job.output = o.output;
    if (o.check) {  // what a cluster submission checks before it queues anything (tools/slurm/submit-sweep)
        job.check_only = true;
        const auto s = sweep::run_sweep(job);
        write_stdout("revgraph: sweep check: " + std::to_string(grid.size()) + " points" +
                     (o.shard ? ", shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ": " +
                                    std::to_string(s.points) + " points"
                              : std::string()) +
                     " on " + s.backend + "; nothing run, " + o.output + " not touched\n");
        return 0;
    }
    ProgressPrinter printer(o.quiet);
    bool announced = false;
    job.on_progress = [&](const sweep::Progress& p) {
        if (!announced && !o.quiet) {
            std::cerr << "revgraph: sweep of " << grid.size() << " points";
            if (o.shard) std::cerr << ", shard " << shard.index << "/" << shard.count << ": " << p.total << " points";
            std::cerr << "; " << p.done << " already in " << o.output << "\n";
        }
        announced = true;
        printer(p);
    };
    const auto s = sweep::run_sweep(job);
    if (!o.quiet) {
        std::cerr << "revgraph: sweep ran " << s.ran << " points on " << s.backend << " (" << s.jobs
                  << " at a time) in " << sweep::human_duration(s.seconds);
        if (s.ran) std::cerr << " (" << s.seconds / double(s.ran) * 1e3 << " ms per point)";
        std::cerr << "; " << o.output << " holds " << s.skipped + s.ran << "/" << s.points << " points\n";
    }
    return 0;
}

int sweep_merge(const MergeOptions& o) {
    if (o.output.empty()) throw UsageError{"sweep merge: --output ALL.jsonl is required"};
    if (o.shards.empty()) throw UsageError{"sweep merge: name the shard files to merge"};
    NamedPaths inputs;
    for (const auto& shard : o.shards) inputs.push_back({"shard", shard});
    require_distinct_writable_outputs({{"--output", o.output}}, inputs);
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& shard : o.shards) {
        const auto bytes = io::read_file(shard);
        files.emplace_back(shard, std::string(bytes.begin(), bytes.end()));
    }
    // The shards alone must make the whole sweep. An existing --output is then merged with them as
    // a check only, so it must be this sweep's (an earlier merge, say): a file of anything else —
    // another sweep, a task archive — is refused, never replaced, and it fills no missing point.
    const std::string merged = sweep::merge_shards(files);
    std::error_code ec;
    if (std::filesystem::exists(o.output, ec)) {
        const auto bytes = io::read_file(o.output);
        files.emplace_back(o.output + " (the existing --output, checked against the shards)",
                           std::string(bytes.begin(), bytes.end()));
        (void)sweep::merge_shards(files);
    }
    io::write_file_atomic(o.output, merged);
    return 0;
}

std::vector<Command> add_sweep_commands(CLI::App& app) {
    struct Parsed {
        SweepOptions sweep;
        TaskOptions task;
        std::optional<std::string> jobs;
    };
    auto o = std::make_shared<Parsed>();
    CLI::App* sub =
        app.add_subcommand("sweep", "a grid of configs run concurrently, one JSON line per point (resumable)");
    sub->add_option("--input", o->sweep.input, "the task (see `data`); without it, the embedded real digits")
        ->type_name("DRAW.npz")
        ->check(kNonEmpty);
    sub->add_option("--test-labels", o->sweep.test_labels, "query labels, for each point's accuracy (needs --input)")
        ->type_name("L.npy")
        ->check(kNonEmpty);
    sub->add_option("--grid", o->sweep.grid,
                    "a swept key and its values, KEY=V1,V2,... (integer keys also A..B); repeatable, the first "
                    "key varies slowest")
        ->type_name("KEY=VALUES")
        ->check(kNonEmpty)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    sub->add_option("--jobs", o->jobs, "points at a time (default: one per usable CPU)")
        ->type_name("N")
        ->check(kNonEmpty);
    sub->add_option("--shard", o->sweep.shard, "run only the points with index % N == I")
        ->type_name("I/N")
        ->check(kNonEmpty);
    sub->add_option("--output", o->sweep.output, "one JSON line per point; rerun to resume")
        ->type_name("SWEEP.jsonl")
        ->check(kNonEmpty);
    add_task_options(*sub, o->task);
    sub->add_flag("--quiet", o->sweep.quiet, "no progress on stderr");
    sub->add_flag("--check", o->sweep.check,
                  "check the options, inputs, grid, shard and output, say how many points, run and write nothing");
    sub->footer(config_keys_help());

    auto m = std::make_shared<MergeOptions>();
    CLI::App* merge = sub->add_subcommand("merge", "shards of one sweep back into the file an unsharded sweep writes");
    merge->add_option("shards", m->shards, "the shards' files, in any order")
        ->type_name("SHARD.jsonl")
        ->check(kNonEmpty);
    merge->add_option("--output", m->output, "the merged sweep")->type_name("ALL.jsonl")->check(kNonEmpty);
    // Its own footer: CLI11 gives a subcommand its parent's, whose config keys merge does not take.
    merge->footer("Exit status 1: a shard missing, unfinished or of another sweep (grid, backend or inputs).");

    // merge first: `sweep merge` parses both, and the deeper one is meant.
    return {{merge, [m] { return sweep_merge(*m); }},
            {sub, [o] {
                 SweepOptions s = o->sweep;
                 if (s.output.empty()) throw UsageError{"sweep: --output SWEEP.jsonl is required"};
                 if (o->jobs) s.jobs = static_cast<unsigned>(parse_int("jobs", *o->jobs, 1, 4096));
                 s.backend = o->task.backend;
                 s.config_file = o->task.config;
                 s.base = config_from(o->task);
                 refuse_gpu_options_on_cpu(o->task);
                 configure_runtime(o->task);
                 return sweep(s);
             }}};
}

}  // namespace revgraph::cli
