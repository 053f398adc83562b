// revgraph: the command line over the engine. Parsing and files here; everything else in engine/.
#include <unistd.h>

#include <climits>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/version.hpp"
#include "tools/revgraph/args.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/sweep.hpp"

namespace {

const char* const kUsage = R"(usage: revgraph <command> [options]

commands:
  run       train a fresh model from its seed and predict the query images
            [--input DRAW.npz] [--test-labels LABELS.npy] [--config CONFIG.json]
            [--set key=value]... [--backend auto|cpu|cpu-reference|cuda|cuda-fused]
            [--output RESULT.json] [--state STATE.npz] [--repeat N] [--device N] [--workspace-bytes N] [--quiet]
            [--pdl]  (cuda-fused: Programmatic Dependent Launch between its kernels; same bytes)
            Without --input: the embedded real digits (5,000 train / 5,000 held-out query),
            and the result reports accuracy.
            --timings adds run_seconds (every run's time, in order) to the result.
  data      make input archives
            data mnist --idx-dir DIR --seed S --output DRAW.npz [--test-labels-output L.npy]
            data embedded --output DRAW.npz [--test-labels-output L.npy] [--split-seed S]
  qualify   SPEC's 11-draw protocol on the official MNIST IDX files
            --idx-dir DIR [--band 12] [--first-seed S] [--draws N] [--output Q.json] [task options]
            --together runs every draw at once (each on its own GPU stream, or CPU thread)
  sweep     a grid of configs, run concurrently, one JSON line per point (resumable)
            [--input DRAW.npz [--test-labels L.npy]] --grid KEY=V1,V2,... (repeatable; integer
            keys also take ranges A..B) [--jobs N] [--shard I/N] --output SWEEP.jsonl [task options]
            sweep merge SHARD.jsonl... --output ALL.jsonl
  validate  write a validation report (CPU numerics, API/CLI smoke, GPU replay where a GPU is usable)
            [--output REPORT.json] [--backend B] [--replays N]
  backends  which backends this build and machine can run (what `auto` picks), or why not
            [--device N] [--json]
  version   print the version and commit

config keys (defaults are rev88): depth 2, alpha 0.5, seed 11, epochs 2, learning_rate 0.1,
batch_size 128, momentum 0.9, weight_decay 0
)";

// Error messages carry file names, which may hold line breaks; the error stays one line.
std::string one_line(std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r') c = ' ';
    return message;
}

std::string self_path(const char* argv0) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) return std::string(buf, static_cast<std::size_t>(n));
    return argv0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace revgraph;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::cout << kUsage;
        return args.empty() ? 2 : 0;
    }
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    try {
        if (command == "run") return cli::run_command(rest);
        if (command == "data") return cli::data_command(rest);
        if (command == "qualify") return cli::qualify_command(rest);
        if (command == "backends") return cli::backends_command(rest);
        if (command == "sweep") return cli::sweep_command(rest);
        if (command == "validate") return cli::validate_command(rest, self_path(argv[0]));
        if (command == "version" || command == "--version") {
            std::cout << "revgraph " << version() << " (" << git_commit() << ")\n";
            return 0;
        }
        throw cli::UsageError{"unknown command '" + command + "' (try revgraph --help)"};
    } catch (const cli::UsageError& e) {
        std::cerr << "revgraph: error: " << one_line(e.message) << "\n";
        return 2;
    } catch (const Error& e) {
        std::cerr << "revgraph: error: " << one_line(e.what()) << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "revgraph: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "revgraph: error: " << one_line(e.what()) << "\n";
        return 1;
    } catch (...) {
        std::cerr << "revgraph: error: internal error (unknown exception)\n";
        return 1;
    }
}
