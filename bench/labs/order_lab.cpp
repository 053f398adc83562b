// bench/labs/order_lab.cpp: what each summation order of engine/model/sum_order.hpp costs on the CPU —
// in accuracy, in moved predictions, and in how far its parameters end from float64 — and what it
// would cut from a fused step's critical path on the GPU (a count, not a time).
//
// Why: issue "Speed to the floor" asks for one order of every sum that the GPU likes (L lanes cut a
// chain of n dependent adds to ceil(n/L) + log2 L) and that the float32 CPU trainer, the emulator and
// `cuda-fused` then share. The sum lab (sum_lab.cu) prices the orders on a GPU; this one answers the
// questions a GPU cannot: do predictions move on the published draws, and is any order less exact.
//
//   revgraph_order_lab                      rev88 on the embedded default task (one draw; the test)
//   revgraph_order_lab --idx-dir DIR        rev88 on the 11 published MNIST-medium draws (docs/spec.md §9)
//       [--published REPORT]                and each draw's predictions against a `revgraph qualify`
//                                           report's (bench/frontier/rev88.qualify.json: the published ones)
//
// Each draw trains the float32 reference trainer (cpu::Trainer, cpu-reference's code) once per lane
// count and once in float64 (index order). Lane count 1 must give the `cpu-reference` backend's
// bytes (parameters and predictions) — the lab's baseline is the engine's order, else it exits 1.
// It prints a table a draw and a summary; bench/NOTES.md records runs. Not a test of speed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <exception>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/sha256.hpp"
#include "engine/model/sum_order.hpp"
#include "engine/qualify/protocol.hpp"
#include "engine/qualify/training_set.hpp"
#include "engine/task.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace revgraph;

constexpr int kLanes[] = {1, 2, 4, 8};
constexpr int kOrders = 4;

// Dependent adds on one fused step's critical path at `lanes` lanes, phase by phase as the rows and
// grads kernels run a step (engine/cuda/fused.hpp): 2·depth forward couples (half terms), the scores
// (width), the softmax row sum and dstate (10 classes), 2·depth − 1 rebuilds and 2·depth branch-row
// phases (half), then the grads kernel's batch sums (batch rows). A sum of n terms in L lanes is a
// chain of ceil(n/L) adds, then log2 L joins.
int critical_adds(const TaskConfig& c, int lanes) {
    const auto chain = [lanes](int n) {
        int levels = 0;
        for (int l = lanes; l > 1; l /= 2) ++levels;
        return (n + lanes - 1) / lanes + levels;
    };
    const int half = c.width / 2, batch = c.batch_size;
    return 2 * c.depth * chain(half) + chain(c.width) + 2 * chain(model::kClasses) + (2 * c.depth - 1) * chain(half) +
           2 * c.depth * chain(half) + chain(batch);
}

template <typename T>
struct Trained {
    std::vector<T> params;
    std::vector<std::int64_t> predictions;
};

template <typename T>
Trained<T> train(const PreparedInputs& prepared, int lanes) {
    cpu::Trainer<T> t(prepared, lanes);
    t.reset();
    t.normalize();
    for (int e = 0; e < prepared.config.epochs; ++e) t.epoch(e);
    t.predict();
    return {t.parameters(), t.predictions()};
}

struct OrderTotals {
    std::int64_t correct = 0, moved = 0;
    int draws_moved = 0, unlike_published = 0;
    double worst_abs = 0, sum_sq = 0;
    std::size_t count = 0;
};

// The predictions_sha256 of each draw of a `revgraph qualify` report, in draw order.
std::vector<std::string> published_hashes(const std::string& path, std::size_t draws) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read " + path);
    const auto report = nlohmann::json::parse(in, nullptr, false);
    if (report.is_discarded() || !report.contains("draws") || !report["draws"].is_array() ||
        report["draws"].size() != draws)
        throw Error(path + " is not a qualify report of " + std::to_string(draws) + " draws");
    std::vector<std::string> hashes;
    for (const auto& d : report["draws"]) {
        if (!d.contains("predictions_sha256") || !d["predictions_sha256"].is_string())
            throw Error(path + ": a draw without predictions_sha256");
        hashes.push_back(d["predictions_sha256"].get<std::string>());
    }
    return hashes;
}

int run(const std::string& idx_dir, const std::string& published_path) {
    // Read first: a bad report fails before any work or output.
    const std::vector<std::string> published = published_path.empty()
                                                   ? std::vector<std::string>{}
                                                   : published_hashes(published_path, qualify::kPublishedDraws);
    const TaskConfig config;  // rev88
    std::vector<data::TaskData> draws;
    std::vector<std::string> names;
    if (idx_dir.empty()) {
        draws.push_back(data::embedded_default_task());
        names.push_back("embedded");
    } else {
        const auto set = qualify::load_training_set(idx_dir);
        if (!set.official()) throw Error(idx_dir + " does not hold the official MNIST training files");
        const data::DrawSource source(set.set.images.pixels, set.set.labels);
        for (int i = 0; i < qualify::kPublishedDraws; ++i) {
            draws.push_back(source.mnist_medium_draw(qualify::kPublishedFirstSeed + static_cast<std::uint64_t>(i)));
            names.push_back("draw " + std::to_string(i));
        }
    }

    std::printf("rev88 (depth %d, width %d, batch %d, %d epochs), float32 reference trainer in each order\n",
                config.depth, config.width, config.batch_size, config.epochs);
    std::printf("%-9s %5s %8s %7s %14s %14s  %s\n", "draw", "lanes", "correct", "moved", "max |p - p64|", "rms p - p64",
                published.empty() ? "predictions_sha256 (RESULT.json's, first 12)"
                                  : "predictions_sha256 (first 12), against the report's");
    OrderTotals totals[kOrders];
    std::int64_t total_count = 0;
    for (std::size_t d = 0; d < draws.size(); ++d) {
        const auto& draw = draws[d];
        PreparedTask task(TaskInputs(draw.train_images, draw.train_labels, draw.test_images), config,
                          make_backend("cpu-reference"));
        task.run();
        const TaskState engine = task.backend().read_state();
        const auto f64 = train<double>(task.prepared(), 1);
        total_count += draw.test_count();
        std::vector<std::int64_t> index_predictions;
        for (int o = 0; o < kOrders; ++o) {
            const int lanes = kLanes[o];
            const auto got = train<float>(task.prepared(), lanes);
            if (lanes == 1) {
                if (got.params != engine.parameters || got.predictions != engine.predictions)
                    throw Error("1 lane does not give cpu-reference's bytes on " + names[d]);
                index_predictions = got.predictions;
            }
            std::int64_t correct = 0, moved = 0;
            for (std::size_t q = 0; q < got.predictions.size(); ++q) {
                correct += got.predictions[q] == draw.test_labels[q];
                moved += got.predictions[q] != index_predictions[q];
            }
            double worst = 0, sum_sq = 0;
            for (std::size_t i = 0; i < got.params.size(); ++i) {
                const double diff = static_cast<double>(got.params[i]) - f64.params[i];
                worst = std::max(worst, std::fabs(diff));
                sum_sq += diff * diff;
            }
            auto& t = totals[o];
            t.correct += correct;
            t.moved += moved;
            t.draws_moved += moved > 0;
            t.worst_abs = std::max(t.worst_abs, worst);
            t.sum_sq += sum_sq;
            t.count += got.params.size();
            const std::string hash = io::sha256_hex(got.predictions);
            const bool unlike = !published.empty() && hash != published[d];
            t.unlike_published += unlike;
            std::printf("%-9s %5d %8lld %7lld %14.3e %14.3e  %.12s%s\n", names[d].c_str(), lanes,
                        static_cast<long long>(correct), static_cast<long long>(moved), worst,
                        std::sqrt(sum_sq / static_cast<double>(got.params.size())), hash.c_str(),
                        published.empty() ? ""
                        : unlike          ? " UNLIKE THE REPORT"
                                          : " = report");
        }
        std::fflush(stdout);
    }

    std::printf("\nsummary over %zu draw(s), %lld queries (moved: predictions unlike 1 lane's)\n", draws.size(),
                static_cast<long long>(total_count));
    std::printf("%5s %8s %7s %12s %14s %14s %22s %s\n", "lanes", "correct", "moved", "draws moved", "max |p - p64|",
                "rms p - p64", "critical-path adds", published.empty() ? "" : " draws unlike the report");
    for (int o = 0; o < kOrders; ++o) {
        const auto& t = totals[o];
        std::printf("%5d %8lld %7lld %12d %14.3e %14.3e %22d", kLanes[o], static_cast<long long>(t.correct),
                    static_cast<long long>(t.moved), t.draws_moved, t.worst_abs,
                    std::sqrt(t.sum_sq / static_cast<double>(t.count)), critical_adds(config, kLanes[o]));
        if (published.empty())
            std::printf("\n");
        else
            std::printf(" %24d\n", t.unlike_published);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    constexpr const char* kUsage = "usage: revgraph_order_lab [--idx-dir DIR [--published REPORT]]";
    std::string idx_dir, published;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf("%s\n", kUsage);
            return 0;
        }
        if (arg == "--idx-dir" || arg == "--published") {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                std::fprintf(stderr, "revgraph_order_lab: error: %s needs a %s (%s)\n", arg.c_str(),
                             arg == "--idx-dir" ? "directory" : "file", kUsage);
                return 2;
            }
            (arg == "--idx-dir" ? idx_dir : published) = argv[++i];
        } else {
            std::fprintf(stderr, "revgraph_order_lab: error: unknown argument '%s' (%s)\n", arg.c_str(), kUsage);
            return 2;
        }
    }
    if (!published.empty() && idx_dir.empty()) {
        std::fprintf(stderr,
                     "revgraph_order_lab: error: --published compares the published draws: give --idx-dir too (%s)\n",
                     kUsage);
        return 2;
    }
    try {
        return run(idx_dir, published);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "revgraph_order_lab: error: %s\n", e.what());
        return 1;
    }
}
