// revgraph sweep: a grid of configs (seeds × depth × ...) as concurrent tasks, one JSON line per
// point (engine/sweep/); revgraph sweep merge: shards back into the unsharded sweep's file.
#include "tools/revgraph/sweep.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/task_files.hpp"
#include "engine/sweep/grid.hpp"
#include "engine/sweep/jsonl.hpp"
#include "engine/sweep/progress.hpp"
#include "engine/sweep/runner.hpp"
#include "tools/revgraph/args.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {
namespace {

namespace fs = std::filesystem;

// An output that is one of the inputs however spelled (a symlink, a hard link) is refused
// before anything is read or written.
void refuse_output_over_input(const std::string& output, const std::string& what, const std::string& input) {
    std::error_code ec;
    if (fs::equivalent(output, input, ec) ||
        fs::weakly_canonical(fs::absolute(output), ec) == fs::weakly_canonical(fs::absolute(input), ec))
        throw UsageError{"--output " + output + " is " + what + " " + input + "; an output never replaces an input"};
}

// Grid and shard mistakes are usage errors (exit 2).
template <typename Fn>
auto usage_checked(const Fn& fn) {
    try {
        return fn();
    } catch (const sweep::UsageProblem& e) {
        throw UsageError{e.what()};
    }
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
    if (o.input) refuse_output_over_input(o.output, "the --input", *o.input);
    if (o.test_labels) refuse_output_over_input(o.output, "the --test-labels", *o.test_labels);
    if (o.config_file) refuse_output_over_input(o.output, "the --config", *o.config_file);
    require_distinct_writable_outputs({{"--output", o.output}});
    const sweep::Grid grid = usage_checked([&] { return sweep::Grid::parse(o.base, o.grid); });
    const sweep::Shard shard = o.shard ? usage_checked([&] { return sweep::parse_shard(*o.shard); }) : sweep::Shard{};

    LabelledTask task;
    if (o.input) {
        task.inputs = io::read_task_inputs(*o.input);
        if (o.test_labels) task.test_labels = io::read_labels(*o.test_labels, task.inputs.test_count());
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
    for (const auto& shard : o.shards) refuse_output_over_input(o.output, "the shard", shard);
    require_distinct_writable_outputs({{"--output", o.output}});
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& shard : o.shards) {
        const auto bytes = io::read_file(shard);
        files.emplace_back(shard, std::string(bytes.begin(), bytes.end()));
    }
    io::write_file_atomic(o.output, sweep::merge_shards(files));
    return 0;
}

int sweep_command(const std::vector<std::string>& argv) {
    if (!argv.empty() && argv[0] == "merge") {
        const Args args(std::vector<std::string>(argv.begin() + 1, argv.end()), {"output"}, {});
        MergeOptions o;
        o.shards = args.positional();
        o.output = args.get("output").value_or("");
        return sweep_merge(o);
    }
    auto options = kTaskOptions;
    options.insert({"input", "test-labels", "grid", "jobs", "shard", "output"});
    auto flags = kTaskFlags;
    flags.insert("quiet");
    const Args args(argv, options, flags);
    if (!args.positional().empty()) throw UsageError{"sweep: unexpected argument '" + args.positional()[0] + "'"};
    SweepOptions o;
    o.input = args.get("input");
    o.test_labels = args.get("test-labels");
    o.grid = args.all("grid");
    if (const auto j = args.get("jobs")) o.jobs = static_cast<unsigned>(parse_int("jobs", *j, 1, 4096));
    o.backend = args.get("backend").value_or("auto");
    o.shard = args.get("shard");
    o.output = args.get("output").value_or("");
    o.quiet = args.flag("quiet");
    o.config_file = args.get("config");
    if (o.output.empty()) throw UsageError{"sweep: --output SWEEP.jsonl is required"};
    o.base = config_from(args);
    configure_runtime(args);
    return sweep(o);
}

}  // namespace revgraph::cli
