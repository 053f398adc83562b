// cpu-timing: wall time of the complete rev88 task (reset, normalise, 2 epochs of SGD, predict)
// on synthetic uniform pixels, for CPU backends side by side, on the calling thread.
//   cpu-timing [--train N] [--test Q] [--repeat R] [backend ...]   (default: cpu cpu-reference)
// A backend is a factory name, or cpu/avx512, cpu/avx2, cpu/portable+fma, cpu/portable for one kernel set.
// Prints, per backend, the median and the fastest of R run() calls after one warm-up run, in
// wall time and in this thread's CPU time (less disturbed by other processes on a busy machine).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/fast_backend.hpp"
#include "engine/error.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/task.hpp"
#include "engine/timing.hpp"

using namespace revgraph;

namespace {
double thread_cpu_ms() { return thread_cpu_seconds() * 1e3; }
}  // namespace

int main(int argc, char** argv) {
    int n = 10000, q = 10000, repeat = 9;
    std::vector<std::string> backends;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() {  // a whole number 1..10^6, all of the text ("10x" is not 10)
            if (i + 1 >= argc) {
                std::fprintf(stderr, "cpu-timing: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            const char* text = argv[++i];
            char* end = nullptr;
            errno = 0;
            const long v = std::strtol(text, &end, 10);
            if (*text == '\0' || *end != '\0' || errno == ERANGE || v < 1 || v > 1000000) {
                std::fprintf(stderr, "cpu-timing: %s must be an integer in 1..1000000, got '%s'\n", a.c_str(), text);
                std::exit(2);
            }
            return static_cast<int>(v);
        };
        if (a == "--help" || a == "-h") {
            std::printf(
                "usage: cpu-timing [--train N] [--test Q] [--repeat R] [backend ...]   (default: cpu "
                "cpu-reference; cpu/avx512, cpu/avx2, cpu/portable+fma, cpu/portable for one kernel set)\n");
            return 0;
        } else if (a == "--train") {
            n = value();
        } else if (a == "--test") {
            q = value();
        } else if (a == "--repeat") {
            repeat = value();
        } else if (a.rfind("-", 0) == 0) {
            std::fprintf(stderr, "cpu-timing: unknown option '%s' (see cpu-timing --help)\n", a.c_str());
            return 2;
        } else {
            backends.push_back(a);
        }
    }
    if (backends.empty()) backends = {"cpu", "cpu-reference"};
    rng::Mt19937 gen(2026);
    std::vector<float> train(static_cast<std::size_t>(n) * 81), test(static_cast<std::size_t>(q) * 81);
    std::vector<std::int64_t> labels;
    for (float& x : train) x = rng::torch_uniform01(gen);
    for (int i = 0; i < n; ++i) labels.push_back(gen.next() % 10);
    for (float& x : test) x = rng::torch_uniform01(gen);
    const TaskInputs in{std::move(train), std::move(labels), std::move(test)};

    const TaskConfig config;  // rev88
    std::printf("rev88 task, %d train / %d query, depth %d, batch %d, %d epochs; median and best of %d runs\n", n, q,
                config.depth, config.batch_size, config.epochs, repeat);
    try {
        for (const auto& name : backends) {
            std::unique_ptr<Backend> backend;
            if (name.rfind("cpu/", 0) == 0) {
                const std::string isa = name.substr(4);
                auto pick = isa == "avx512"         ? cpu::fast::Isa::avx512
                            : isa == "avx2"         ? cpu::fast::Isa::avx2
                            : isa == "portable"     ? cpu::fast::Isa::portable
                            : isa == "portable+fma" ? cpu::fast::Isa::portable_fma
                                                    : throw Error("unknown kernel set '" + isa + "'");
                backend = std::make_unique<cpu::FastBackend>(pick);
            } else {
                backend = make_backend(name);
            }
            PreparedTask task(in, config, std::move(backend));
            task.run();  // warm-up: caches, page faults, frequency
            std::vector<double> ms, cpu_ms;
            for (int r = 0; r < repeat; ++r) {
                const double cpu0 = thread_cpu_ms();
                task.run();
                cpu_ms.push_back(thread_cpu_ms() - cpu0);
                ms.push_back(task.last_run_seconds() * 1e3);
            }
            std::sort(ms.begin(), ms.end());
            std::sort(cpu_ms.begin(), cpu_ms.end());
            std::printf("%-14s wall median %8.2f ms best %8.2f ms | cpu median %8.2f ms best %8.2f ms  (%s)\n",
                        name.c_str(), ms[ms.size() / 2], ms.front(), cpu_ms[cpu_ms.size() / 2], cpu_ms.front(),
                        task.backend().device().c_str());
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "cpu-timing: %s\n", e.what());
        return 1;
    }
    return 0;
}
