#include "bench/harness/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <regex>

#include <CLI/CLI.hpp>

#include "engine/backends.hpp"
#include "engine/config_from.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/runtime_options.hpp"

namespace revgraph::bench {
namespace {

const char* const kUsage = R"(usage: revgraph_bench [revgraph options] [--benchmark_* options]

revgraph options (before Google Benchmark sees the command line):
  --train=N --query=Q     synthetic task size (default 10000 / 10000, at most 1000000 each:
                          data::synthetic_task)
  --data-seed=S           synthetic draw seed (default 2026)
  --input=DRAW.npz        run on this task archive instead (e.g. bench/compare/compare_torch's draw;
                          then none of the three above)
  --backends=a,b          backends to measure (default: every backend of engine/backends.cpp's
                          table: `revgraph backends` lists them); a name that cannot be built
                          here is reported and skipped
  --warmup=N              untimed complete runs after preparation (default 1 on CPU, 10 on GPU)
  --gpu-min-time=S        minimum measured seconds per GPU benchmark (default 2)
  --flush-l2              before every GPU task or phase, write 2 x L2 of device memory (untimed)
                          so each starts with a cold L2; env REVGRAPH_BENCH_FLUSH_L2=1 does the same
  --pdl, --no-pdl         cuda-fused launches its kernels with Programmatic Dependent Launch (the
                          default), or plainly (as revgraph run; recorded in the context as
                          programmatic_launch)
  --cluster-blocks=N      cuda-fused (width 82) runs each epoch in one launch of a thread-block
                          cluster of N blocks (1..16, sm_90+; 0: two kernels a step, the default;
                          recorded in the context as cluster_blocks)
  --energy                instead of benchmarks: joules per task through NVML (see NOTES.md); the
                          options below are its own, refused without it
  --energy-backend=B      backend for --energy (default cuda)
  --energy-tasks=K        K tasks at once per round (run_together, seeds 11, 12, ...; default 1):
                          joules per task for a seed sweep on one GPU
  --energy-seconds=S      minimum seconds of tasks (default 20, the group's protocol);
                          --energy-min-tasks=N (default 50)
  --settle-seconds=S      nothing runs this long before each idle window (default 3: NVML's power
                          is a ~1 s average, so idle read right after work is inflated)
  --idle-seconds=S        idle power sampled before the tasks, the idle subtracted (default 10)
  --idle-after-seconds=S  idle sampled after them, recorded only (default 10; 0: none)
  --energy-config=FILE    the task --energy measures: this config (JSON, as `revgraph run --config`)
  --energy-set=KEY=VALUE  ... and/or these settings, after the file (repeatable; default: rev88)
  --energy-out=FILE       write the energy report as JSON (also printed as one line)
  --nvml-library=PATH     NVML library to dlopen (default libnvidia-ml.so.1)
  --help

Google Benchmark options as usual, e.g. --benchmark_filter=task/ --benchmark_format=json
--benchmark_out=FILE --benchmark_out_format=json --benchmark_repetitions=5
--benchmark_report_aggregates_only=true --benchmark_min_time=0.5
)";

[[noreturn]] void usage_error(const std::string& message) {
    std::cerr << "revgraph_bench: error: " << message << " (see revgraph_bench --help)\n";
    std::exit(2);
}

// A number (integer: a whole one) >= min (strict: > min) and, where given, <= max, said plainly
// when it is not.
CLI::Validator at_least(double min, bool integer, bool strict = false, std::optional<long long> max = {}) {
    const std::string what =
        max ? "an integer in " + std::to_string(static_cast<long long>(min)) + ".." + std::to_string(*max)
            : std::string(integer ? "an integer" : "a number") + (strict ? " > " : " >= ") +
                  std::to_string(static_cast<long long>(min));
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            char* end = nullptr;
            errno = 0;
            const double v =
                integer ? static_cast<double>(std::strtoll(text.c_str(), &end, 10)) : std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || errno == ERANGE || !(strict ? v > min : v >= min) ||
                (max && v > static_cast<double>(*max)))
                return "expected " + what + ", got '" + text + "'";
            return {};
        },
        what);
}

// The synthetic task's largest side: 100x MNIST-medium's 10,000 (324 MB of images), far past what a
// benchmark of this model measures; a typo's billions are refused here, not found by bad_alloc
// after seconds of drawing.
constexpr long long kMaxSyntheticImages = 1'000'000;

bool is_benchmark_option(const std::string& arg) {
    return arg.rfind("--benchmark_", 0) == 0 || arg.rfind("--v=", 0) == 0;
}

}  // namespace

Options& options() {
    static Options o;
    return o;
}

void parse_options(int* argc, char** argv) {
    Options& o = options();
    if (const char* env = std::getenv("REVGRAPH_BENCH_FLUSH_L2"); env && std::string(env) != "0" && *env)
        o.flush_l2 = true;

    // Google Benchmark's options stay in argv, in order; CLI11 sees only ours.
    std::vector<std::string> ours;
    int kept = 1;
    for (int i = 1; i < *argc; ++i) {
        if (is_benchmark_option(argv[i]))
            argv[kept++] = argv[i];
        else
            ours.emplace_back(argv[i]);
    }
    *argc = kept;
    argv[kept] = nullptr;
    // Google Benchmark's numbers, checked here so that a bad one is one line like ours (its own
    // parser says two: the value, then "unrecognized command-line flag"), and a count of 0 is not
    // a run that measures nothing and exits 0.
    std::optional<std::string> benchmark_out;  // Google Benchmark takes the last; the harness stages one
    static const std::string out_flag = "--benchmark_out=";
    for (int i = 1; i < kept; ++i)
        if (const std::string arg = argv[i]; arg.rfind(out_flag, 0) == 0) {
            if (benchmark_out) usage_error("--benchmark_out given twice");
            benchmark_out = arg.substr(out_flag.size());
        }
    for (int i = 1; i < kept; ++i) {
        const std::string arg = argv[i];
        for (const auto& [flag, check] : {std::pair{"--benchmark_min_time=", at_least(0, false, true)},
                                          std::pair{"--benchmark_min_warmup_time=", at_least(0, false)},
                                          std::pair{"--benchmark_repetitions=", at_least(1, true)}}) {
            const std::string name = flag;
            if (arg.rfind(name, 0) != 0) continue;
            std::string value = arg.substr(name.size());
            if (const std::string problem = check(value); !problem.empty())
                usage_error(name.substr(0, name.size() - 1) + ": " + problem);
        }
        // The filter as Google Benchmark compiles it (std::regex, extended; a leading '-' negates):
        // an invalid one was its own line, then ours saying that nothing matched.
        if (static const std::string filter = "--benchmark_filter="; arg.rfind(filter, 0) == 0) {
            std::string re = arg.substr(filter.size());
            if (!re.empty() && re[0] == '-') re.erase(0, 1);
            try {
                std::regex(re, std::regex::extended | std::regex::nosubs);
            } catch (const std::regex_error&) {
                usage_error("--benchmark_filter: '" + re + "' is not a regular expression (POSIX extended)");
            }
        }
    }

    CLI::App app("revgraph_bench", "revgraph_bench");
    app.set_help_flag();  // our own --help below prints kUsage, which also covers Google Benchmark's
    bool help = false, pdl = false, no_pdl = false;
    app.add_flag("-h,--help", help);
    app.add_option("--train", o.train)->check(at_least(1, true, false, kMaxSyntheticImages));
    app.add_option("--query", o.query)->check(at_least(1, true, false, kMaxSyntheticImages));
    app.add_option("--data-seed", o.data_seed)->check(at_least(0, true));
    app.add_option("--input", o.input);
    app.add_option("--backends", o.backends)->delimiter(',');
    app.add_option("--warmup", o.warmup)->check(at_least(0, true));
    // Google Benchmark's MinTime wants a time above 0
    app.add_option("--gpu-min-time", o.gpu_min_time)->check(at_least(0, false, true));
    app.add_flag("--flush-l2", o.flush_l2);
    app.add_flag("--pdl", pdl);
    app.add_flag("--no-pdl", no_pdl)->excludes("--pdl");
    std::optional<std::string> cluster_blocks;
    app.add_option("--cluster-blocks", cluster_blocks);
    app.add_flag("--energy", o.energy);
    app.add_option("--energy-backend", o.energy_backend);
    app.add_option("--energy-tasks", o.energy_tasks)->check(at_least(1, true));
    app.add_option("--energy-seconds", o.energy_options.min_seconds)->check(at_least(0, false));
    app.add_option("--energy-min-tasks", o.energy_options.min_tasks)->check(at_least(1, true));
    app.add_option("--idle-seconds", o.energy_options.idle_seconds)->check(at_least(0, false));
    app.add_option("--idle-after-seconds", o.energy_options.idle_after_seconds)->check(at_least(0, false));
    app.add_option("--settle-seconds", o.energy_options.settle_seconds)->check(at_least(0, false));
    app.add_option("--energy-out", o.energy_out);
    std::optional<std::string> energy_config_file;
    std::vector<std::string> energy_sets;
    app.add_option("--energy-config", energy_config_file);
    app.add_option("--energy-set", energy_sets);
    app.add_option("--nvml-library", o.nvml_library);
    try {
        std::reverse(ours.begin(), ours.end());  // CLI11 parses a vector from its back
        app.parse(ours);
    } catch (const CLI::ParseError& e) { usage_error(e.what()); }
    if (help) {
        std::cout << kUsage;
        std::exit(0);
    }
    // A backend the table does not know is a typo, not a backend this machine cannot run: refused
    // here (the engine's one message, which lists the names), where a known one that cannot run
    // is only noted when the benchmarks are made.
    const auto known = [](const char* option, const std::string& name) {
        try {
            backend_row(name);
        } catch (const std::exception& e) { usage_error(std::string(option) + ": " + e.what()); }
    };
    for (const std::string& name : o.backends) known("--backends", name);
    known("--energy-backend", o.energy_backend);
    if (energy_config_file || !energy_sets.empty()) {  // the engine's one config reader, checked at once
        try {
            o.energy_config = config_from(energy_config_file, energy_sets);
        } catch (const std::exception& e) { usage_error(std::string("--energy-config/--energy-set: ") + e.what()); }
        if (o.energy_tasks != 1)
            usage_error("--energy-config/--energy-set measure one task a round: not with --energy-tasks");
    }
    // An option that would be ignored is a mistake in the command, not a default to fall back on.
    for (const char* synthetic : {"--train", "--query", "--data-seed"})
        if (!o.input.empty() && app.count(synthetic))
            usage_error(std::string(synthetic) + " is for the synthetic task; --input gives the task itself");
    if (!o.energy)
        for (const char* energy_only : {"--energy-backend", "--energy-tasks", "--energy-seconds", "--energy-min-tasks",
                                        "--idle-seconds", "--idle-after-seconds", "--settle-seconds", "--energy-out",
                                        "--energy-config", "--energy-set", "--nvml-library"})
            if (app.count(energy_only))
                usage_error(std::string(energy_only) + " is an --energy option; --energy is not given");
    // Outputs never replace an input nor each other, and their folders exist: checked before any
    // work (an energy window is 30-55 s; a report lost at its end wastes it).
    std::vector<io::NamedPath> inputs, outputs;
    if (!o.input.empty()) inputs.push_back({"--input", o.input});
    if (energy_config_file) inputs.push_back({"--energy-config", *energy_config_file});
    if (!o.energy_out.empty()) outputs.push_back({"--energy-out", o.energy_out});
    // A --benchmark_out that is a device or a fifo (/dev/stdout) is written as Google Benchmark writes
    // it (stage_benchmark_out); a folder is refused here.
    if (benchmark_out && !benchmark_out->empty()) {
        const std::string kind = io::non_regular_kind(*benchmark_out);
        if (kind.empty() || kind == "a directory") outputs.push_back({"--benchmark_out", *benchmark_out});
    }
    try {
        io::require_outputs(inputs, outputs);
    } catch (const io::SameFileError& e) { usage_error(e.what()); } catch (const std::exception& e) {
        std::cerr << "revgraph_bench: error: " << e.what() << "\n";
        std::exit(1);
    }
    if (pdl || no_pdl || cluster_blocks) {
        RuntimeOptions r = Runtime::options();
        if (pdl || no_pdl) r.programmatic_launch = pdl;
        try {
            if (cluster_blocks)
                r.fused_cluster_blocks = RuntimeOptions::cluster_blocks_from(*cluster_blocks, "--cluster-blocks");
        } catch (const std::exception& e) { usage_error(e.what()); }
        Runtime::configure(r);  // before any backend exists: nothing has touched the GPU yet
    }
}

}  // namespace revgraph::bench
