// revgraph_bench: Google Benchmark over every backend this build can make here.
//
//   task/<backend>                       the complete rev88 task (PreparedTask::run)
//   phase/<backend>/{reset,normalize,epoch,predict}   the Backend phase methods, one at a time
//   sweep_depth/<backend>/depth:{1,2,4,8}             batch 128
//   sweep_batch/<backend>/batch:{8..1024}             depth 2
//   throughput/<backend>/tasks:{1,2,4,..}             K rev88 tasks at once (seeds 11, 12, ...):
//                                                     GPU: each on its own stream; CPU: a thread each
//
// Every iteration's time is set manually (UseManualTime): the backend's own device time for the
// complete task where it has one (CUDA events), else the wall time of run() including its final
// synchronize. Preparation (PreparedTask's constructor: hashing, init draws, permutations,
// allocation, upload, graph capture) and warm-up runs happen before the timed loop. See
// bench/NOTES.md for what each number means and how to run it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "bench/energy.hpp"
#include "bench/gpu_hooks.hpp"
#include "bench/nvtx.hpp"
#include "engine/backends.hpp"
#include "engine/cpu/cpu_name.hpp"
#include "engine/cuda/device.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/sha256.hpp"
#include "engine/io/task_files.hpp"
#include "engine/runtime_options.hpp"
#include "engine/task.hpp"
#include "engine/version.hpp"

namespace revgraph::bench {
namespace {

const char* const kUsage = R"(usage: revgraph_bench [revgraph options] [--benchmark_* options]

revgraph options (before Google Benchmark sees the command line):
  --train=N --query=Q     synthetic task size (default 10000 / 10000: data::synthetic_task)
  --data-seed=S           synthetic draw seed (default 2026)
  --input=DRAW.npz        run on this task archive instead (e.g. bench/compare's draw)
  --backends=a,b          backends to measure (default: cpu-reference, cpu, and cuda and
                          cuda-fused where a GPU is usable); a name that cannot be built here is
                          reported and skipped
  --warmup=N              untimed complete runs after preparation (default 1 on CPU, 10 on GPU)
  --gpu-min-time=S        minimum measured seconds per GPU benchmark (default 2)
  --flush-l2              before every GPU task or phase, write 2 x L2 of device memory (untimed)
                          so each starts with a cold L2; env REVGRAPH_BENCH_FLUSH_L2=1 does the same
  --pdl                   cuda-fused launches its kernels with Programmatic Dependent Launch
                          (revgraph run --pdl; recorded in the context as programmatic_launch)
  --energy                instead of benchmarks: joules per task through NVML (see NOTES.md)
  --energy-backend=B      backend for --energy (default cuda)
  --energy-tasks=K        K tasks at once per round (run_together, seeds 11, 12, ...; default 1):
                          joules per task for a seed sweep on one GPU
  --energy-seconds=S      minimum measured seconds (default 5); --energy-min-tasks=N (default 50)
  --idle-seconds=S        idle power sampling before and after (default 1)
  --energy-out=FILE       write the energy report as JSON (also printed as one line)
  --nvml-library=PATH     NVML library to dlopen (default libnvidia-ml.so.1)
  --help

Google Benchmark options as usual, e.g. --benchmark_filter=task/ --benchmark_format=json
--benchmark_out=FILE --benchmark_out_format=json --benchmark_repetitions=5
--benchmark_report_aggregates_only=true --benchmark_min_time=0.5
)";

struct Options {
    std::int64_t train = 10000, query = 10000;
    std::uint64_t data_seed = 2026;
    std::string input;  // a task archive instead of the synthetic draw
    std::vector<std::string> backends;  // empty: every one buildable here
    int warmup = -1;                    // -1: 1 on CPU, 10 on GPU
    double gpu_min_time = 2.0;
    bool flush_l2 = false;
    bool energy = false;
    std::string energy_backend = "cuda";
    int energy_tasks = 1;
    std::string energy_out;
    std::string nvml_library = kNvmlLibrary;
    EnergyOptions energy_options;
};

Options g_options;

struct BackendInfo {
    std::string request;  // the make_backend name
    std::string name;     // Backend::name()
    std::string device;
    bool gpu = false;
};

// ---------------------------------------------------------------------------------- options
std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        const auto comma = s.find(',', start);
        const auto part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!part.empty()) out.push_back(part);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

[[noreturn]] void usage_error(const std::string& message) {
    std::cerr << "revgraph_bench: " << message << "\n(see revgraph_bench --help)\n";
    std::exit(2);
}

double to_double(const std::string& key, const std::string& text, double min) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= min)) usage_error(key + ": expected a number >= " + std::to_string(min));
    return v;
}

std::int64_t to_int(const std::string& key, const std::string& text, std::int64_t min) {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < min) usage_error(key + ": expected an integer >= " + std::to_string(min));
    return v;
}

// Takes our options out of argv (in place) and leaves the rest for Google Benchmark.
void parse_options(int* argc, char** argv) {
    Options& o = g_options;
    if (const char* env = std::getenv("REVGRAPH_BENCH_FLUSH_L2"); env && std::string(env) != "0" && *env)
        o.flush_l2 = true;
    int kept = 1;
    for (int i = 1; i < *argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--benchmark_", 0) == 0 || arg.rfind("--v=", 0) == 0) {
            argv[kept++] = argv[i];
            continue;
        }
        const auto eq = arg.find('=');
        const std::string key = arg.substr(0, eq);
        const bool has_value = eq != std::string::npos;
        const std::string value = has_value ? arg.substr(eq + 1) : "";
        auto need = [&]() -> const std::string& {
            if (!has_value) usage_error(key + " needs a value (" + key + "=...)");
            return value;
        };
        if (key == "--help" || key == "-h") {
            std::cout << kUsage;
            std::exit(0);
        } else if (key == "--train") {
            o.train = to_int(key, need(), 1);
        } else if (key == "--query") {
            o.query = to_int(key, need(), 1);
        } else if (key == "--data-seed") {
            o.data_seed = static_cast<std::uint64_t>(to_int(key, need(), 0));
        } else if (key == "--input") {
            o.input = need();
        } else if (key == "--backends") {
            o.backends = split_commas(need());
        } else if (key == "--warmup") {
            o.warmup = static_cast<int>(to_int(key, need(), 0));
        } else if (key == "--gpu-min-time") {
            o.gpu_min_time = to_double(key, need(), 0);
        } else if (key == "--flush-l2" && !has_value) {
            o.flush_l2 = true;
        } else if (key == "--pdl" && !has_value) {
            RuntimeOptions r = Runtime::options();
            r.programmatic_launch = true;
            Runtime::configure(r);  // before any backend exists: nothing has touched the GPU yet
        } else if (key == "--energy" && !has_value) {
            o.energy = true;
        } else if (key == "--energy-backend") {
            o.energy_backend = need();
        } else if (key == "--energy-tasks") {
            o.energy_tasks = static_cast<int>(to_int(key, need(), 1));
        } else if (key == "--energy-seconds") {
            o.energy_options.min_seconds = to_double(key, need(), 0);
        } else if (key == "--energy-min-tasks") {
            o.energy_options.min_tasks = static_cast<int>(to_int(key, need(), 1));
        } else if (key == "--idle-seconds") {
            o.energy_options.idle_seconds = to_double(key, need(), 0);
        } else if (key == "--energy-out") {
            o.energy_out = need();
        } else if (key == "--nvml-library") {
            o.nvml_library = need();
        } else {
            usage_error("unknown option '" + arg + "'");
        }
    }
    *argc = kept;
    argv[kept] = nullptr;
}

// ------------------------------------------------------------------------------ data, tasks
const TaskInputs& task_inputs() {
    static const TaskInputs inputs = [] {
        if (!g_options.input.empty()) return io::read_task_inputs(g_options.input);
        data::TaskData d = data::synthetic_task(g_options.train, g_options.query, g_options.data_seed);
        TaskInputs in;
        in.train_images = std::move(d.train_images);
        in.train_labels = std::move(d.train_labels);
        in.test_images = std::move(d.test_images);
        return in;
    }();
    return inputs;
}

std::string data_description() {
    if (!g_options.input.empty()) return g_options.input;
    // Not byte-equal to tools/make_synthetic.py's draw for the same seed (the labels are drawn
    // differently); bench/compare passes its own file with --input where that matters.
    return "data::synthetic_task(" + std::to_string(g_options.train) + ", " + std::to_string(g_options.query) + ", " +
           std::to_string(g_options.data_seed) + ")";
}

bool is_gpu_name(const std::string& name) { return name.rfind("cuda", 0) == 0; }

int warmup_runs(const BackendInfo& b) { return g_options.warmup >= 0 ? g_options.warmup : (b.gpu ? 10 : 1); }

// One prepared task at a time: benchmarks with the same backend and shape run one after the
// other (Google Benchmark calls a function several times while it sizes the iteration count),
// so they share the preparation and the warm-up; a new shape replaces the old task.
struct TaskSlot {
    std::string key;
    std::unique_ptr<PreparedTask> task;
};
TaskSlot g_slot;

// The throughput benchmarks' tasks, kept the same way (one backend and count at a time).
struct ManySlot {
    std::string key;
    std::vector<std::unique_ptr<PreparedTask>> tasks;
    std::vector<PreparedTask*> list;
};
ManySlot g_many;

PreparedTask& prepared_task(const BackendInfo& b, int depth, int batch_size) {
    const std::string key = b.request + "/" + std::to_string(depth) + "/" + std::to_string(batch_size);
    if (g_slot.task && g_slot.key == key) return *g_slot.task;
    g_slot.task.reset();  // free the previous shape's buffers first
    g_slot.key.clear();
    g_many = ManySlot{};
    TaskConfig config;  // rev88
    config.depth = depth;
    config.batch_size = batch_size;
    auto task = std::make_unique<PreparedTask>(task_inputs(), config, make_backend(b.request));
    {
        NvtxRange range("warm-up");
        for (int i = 0; i < warmup_runs(b); ++i) task->run();
    }
    g_slot.task = std::move(task);
    g_slot.key = key;
    return *g_slot.task;
}

// `count` rev88 tasks on the same data with seeds 11, 12, ...: a seed sweep, as many people run one.
const std::vector<PreparedTask*>& prepared_tasks(const BackendInfo& b, int count) {
    const std::string key = b.request + "/" + std::to_string(count);
    if (g_many.key == key) return g_many.list;
    g_slot.task.reset();
    g_slot.key.clear();
    g_many = ManySlot{};
    ManySlot slot;
    for (int k = 0; k < count; ++k) {
        TaskConfig config;  // rev88
        config.seed += static_cast<std::uint64_t>(k);
        slot.tasks.push_back(std::make_unique<PreparedTask>(task_inputs(), config, make_backend(b.request)));
        slot.list.push_back(slot.tasks.back().get());
    }
    {
        NvtxRange range("warm-up");
        for (int i = 0; i < warmup_runs(b); ++i) PreparedTask::run_together(slot.list);
    }
    slot.key = key;
    g_many = std::move(slot);
    return g_many.list;
}

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median, fastest and slowest iteration of this call, and the thread's CPU time per iteration
// (for CPU backends: less disturbed than wall time by other processes on a shared machine).
void report_times(benchmark::State& state, const std::vector<double>& seconds, const std::vector<double>& cpu_seconds) {
    if (seconds.empty()) return;
    state.counters["median_ms"] = median_of(seconds) * 1e3;
    state.counters["min_ms"] = *std::min_element(seconds.begin(), seconds.end()) * 1e3;
    state.counters["max_ms"] = *std::max_element(seconds.begin(), seconds.end()) * 1e3;
    if (!cpu_seconds.empty()) state.counters["thread_cpu_median_ms"] = median_of(cpu_seconds) * 1e3;
}

void report_shape(benchmark::State& state, PreparedTask& task) {
    const auto& config = task.config();
    const std::int64_t full_batch = std::min<std::int64_t>(config.batch_size, task.inputs().train_count());
    const auto bytes = static_cast<double>(task.backend().retained_core_bytes());
    state.counters["retained_core_bytes"] = bytes;
    state.counters["core_bytes_per_example"] = bytes / static_cast<double>(full_batch);
    state.counters["retained_core_states"] = task.backend().retained_core_states();
    state.counters["depth"] = config.depth;
    state.counters["batch_size"] = config.batch_size;
    state.SetLabel(task.backend().name() + " | " + task.backend().device());
}

// ------------------------------------------------------------------------------ benchmarks
void bm_task(benchmark::State& state, const BackendInfo& b, int depth, int batch_size) {
    PreparedTask* task = nullptr;
    try {
        task = &prepared_task(b, depth, batch_size);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    const bool flush = g_options.flush_l2 && b.gpu;
    const std::string range = "task " + b.name + " depth " + std::to_string(depth) + " batch " + std::to_string(batch_size);
    std::vector<double> seconds, cpu_seconds;
    bool device_timed = false;
    for (auto _ : state) {
        if (flush) flush_l2();
        const double cpu0 = thread_cpu_seconds();
        {
            NvtxRange r(range.c_str());
            task->run();
        }
        const double cpu1 = thread_cpu_seconds();
        device_timed = task->backend().last_run_device_seconds().has_value();
        const double s = task->last_run_seconds();
        state.SetIterationTime(s);
        seconds.push_back(s);
        if (!b.gpu) cpu_seconds.push_back(cpu1 - cpu0);
    }
    const auto& config = task->config();
    // Examples processed per task: every train image once per epoch, every query image once.
    const std::int64_t examples = task->inputs().train_count() * config.epochs + task->inputs().test_count();
    state.SetItemsProcessed(state.iterations() * examples);
    state.counters["examples_per_task"] = static_cast<double>(examples);
    state.counters["device_timed"] = device_timed ? 1 : 0;
    report_shape(state, *task);
    report_times(state, seconds, cpu_seconds);
}

// K tasks at once through PreparedTask::run_together: wall time from the first launch to the last
// task done (every task's results are its own run()'s bytes; the suites test that).
void bm_throughput(benchmark::State& state, const BackendInfo& b) {
    const int count = static_cast<int>(state.range(0));
    const std::vector<PreparedTask*>* tasks = nullptr;
    try {
        tasks = &prepared_tasks(b, count);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    const bool flush = g_options.flush_l2 && b.gpu;
    const std::string range = "throughput " + b.name + " tasks " + std::to_string(count);
    std::vector<double> seconds;
    for (auto _ : state) {
        if (flush) flush_l2();
        double s = 0;
        {
            NvtxRange r(range.c_str());
            s = PreparedTask::run_together(*tasks);
        }
        state.SetIterationTime(s);
        seconds.push_back(s);
    }
    PreparedTask& first = *tasks->front();
    const std::int64_t examples =
        first.inputs().train_count() * first.config().epochs + first.inputs().test_count();
    state.SetItemsProcessed(state.iterations() * examples * count);
    state.counters["tasks"] = count;
    report_shape(state, first);
    report_times(state, seconds, {});
    const double median = median_of(seconds);
    if (median > 0) {
        state.counters["tasks_per_second"] = count / median;
        state.counters["ms_per_task"] = median * 1e3 / count;
    }
}

enum class Phase { reset, normalize, epoch, predict };

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::reset: return "reset";
        case Phase::normalize: return "normalize";
        case Phase::epoch: return "epoch";
        case Phase::predict: return "predict";
    }
    return "?";
}

// One Backend phase at a time, wall time around the call and a synchronize() (on a GPU this
// includes launch and synchronisation overhead that a captured complete task does not pay).
void bm_phase(benchmark::State& state, const BackendInfo& b, Phase phase) {
    PreparedTask* task = nullptr;
    try {
        task = &prepared_task(b, TaskConfig{}.depth, TaskConfig{}.batch_size);
        task->run();  // trained parameters and normalised rows, as predict() expects them
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    Backend& backend = task->backend();
    const bool flush = g_options.flush_l2 && b.gpu;
    const std::string range = std::string("phase ") + phase_name(phase) + " " + b.name;
    std::vector<double> seconds, cpu_seconds;
    for (auto _ : state) {
        if (phase == Phase::epoch) {  // every epoch starts from the seed's parameters (untimed)
            backend.reset();
            backend.normalize();
            backend.synchronize();
        }
        if (flush) flush_l2();
        const double cpu0 = thread_cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        {
            NvtxRange r(range.c_str());
            switch (phase) {
                case Phase::reset: backend.reset(); break;
                case Phase::normalize: backend.normalize(); break;
                case Phase::epoch: backend.epoch(0); break;
                case Phase::predict: backend.predict(); break;
            }
            backend.synchronize();
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu1 = thread_cpu_seconds();
        state.SetIterationTime(s);
        seconds.push_back(s);
        if (!b.gpu) cpu_seconds.push_back(cpu1 - cpu0);
    }
    const std::int64_t n = task->inputs().train_count(), q = task->inputs().test_count();
    const std::int64_t items = phase == Phase::epoch ? n : phase == Phase::predict ? q : phase == Phase::normalize ? n + q : 0;
    if (items) state.SetItemsProcessed(state.iterations() * items);
    report_shape(state, *task);
    report_times(state, seconds, cpu_seconds);
}

// ------------------------------------------------------------------------------ discovery
std::vector<BackendInfo> discover_backends(std::vector<std::string>* notes) {
    std::vector<std::string> requests = g_options.backends;
    const bool explicit_list = !requests.empty();
    if (!explicit_list) requests = {"cpu-reference", "cpu", "cuda", "cuda-fused"};  // "cpu" may be the reference
    std::vector<BackendInfo> found;
    for (const auto& request : requests) {
        if (request.rfind("cuda", 0) == 0 && cuda::device_count() == 0) {
            notes->push_back(request + ": not measured (" + cuda::describe_device() + ")");
            continue;
        }
        try {
            auto backend = make_backend(request);
            BackendInfo info{request, backend->name(), backend->device(), is_gpu_name(backend->name())};
            const auto same = std::find_if(found.begin(), found.end(), [&](const BackendInfo& f) { return f.name == info.name; });
            if (same != found.end()) {
                notes->push_back(request + ": the same backend as " + same->request + " (" + info.name +
                                 ") in this build; measured once");
                continue;
            }
            found.push_back(info);
        } catch (const std::exception& e) {
            notes->push_back(request + ": not measured (" + e.what() + ")");
        }
    }
    return found;
}

void register_benchmarks(const std::vector<BackendInfo>& backends) {
    using benchmark::RegisterBenchmark;
    for (const auto& b : backends) {
        auto tune = [&](benchmark::internal::Benchmark* bm, benchmark::TimeUnit unit) {
            bm->UseManualTime()->Unit(unit);
            if (b.gpu) bm->MinTime(g_options.gpu_min_time);
        };
        tune(RegisterBenchmark(("task/" + b.name).c_str(), bm_task, b, TaskConfig{}.depth, TaskConfig{}.batch_size),
             benchmark::kMillisecond);
        for (Phase p : {Phase::reset, Phase::normalize, Phase::epoch, Phase::predict})
            tune(RegisterBenchmark(("phase/" + b.name + "/" + phase_name(p)).c_str(), bm_phase, b, p),
                 p == Phase::reset ? benchmark::kMicrosecond : benchmark::kMillisecond);
        auto* depth = RegisterBenchmark(("sweep_depth/" + b.name).c_str(), [b](benchmark::State& s) {
            bm_task(s, b, static_cast<int>(s.range(0)), TaskConfig{}.batch_size);
        });
        depth->ArgName("depth")->Arg(1)->Arg(2)->Arg(4)->Arg(8);
        tune(depth, benchmark::kMillisecond);
        auto* batch = RegisterBenchmark(("sweep_batch/" + b.name).c_str(), [b](benchmark::State& s) {
            bm_task(s, b, TaskConfig{}.depth, static_cast<int>(s.range(0)));
        });
        batch->ArgName("batch")->RangeMultiplier(2)->Range(8, 1024);
        tune(batch, benchmark::kMillisecond);
        // GPU: up to 16 streams; CPU: up to one task per hardware thread.
        auto* many = RegisterBenchmark(("throughput/" + b.name).c_str(), bm_throughput, b);
        const int most = b.gpu ? 16 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        many->ArgName("tasks");
        for (int k = 1; k <= most; k *= 2) many->Arg(k);
        tune(many, benchmark::kMillisecond);
    }
}

// ------------------------------------------------------------------------------ energy mode
int energy_mode() {
    const Options& o = g_options;
    EnergyReport report;
    std::string why;
    const std::string pci = is_gpu_name(o.energy_backend) ? cuda_pci_bus_id(Runtime::options().device) : "";
    auto nvml = Nvml::open(&why, o.nvml_library, pci, static_cast<unsigned>(Runtime::options().device));
    if (!nvml) {
        report = not_available(why);
    } else {
        try {
            auto backend = make_backend(o.energy_backend);
            const std::string name = backend->name();
            if (!is_gpu_name(name)) {
                report = not_available("backend " + name + " runs on the CPU; NVML measures the GPU board only");
            } else {
                BackendInfo info{o.energy_backend, name, backend->device(), true};
                backend.reset();
                if (o.energy_tasks == 1) {
                    PreparedTask& task = prepared_task(info, TaskConfig{}.depth, TaskConfig{}.batch_size);
                    report = measure_energy(
                        *nvml,
                        [&] {
                            NvtxRange r("energy task");
                            task.run();
                            return task.last_run_seconds();
                        },
                        o.energy_options);
                } else {
                    const std::vector<PreparedTask*>& tasks = prepared_tasks(info, o.energy_tasks);
                    report = measure_energy(
                        *nvml,
                        [&] {
                            NvtxRange r("energy tasks together");
                            return PreparedTask::run_together(tasks);
                        },
                        o.energy_options, o.energy_tasks);
                }
                report.device = info.device;
            }
            report.backend = name;
        } catch (const std::exception& e) {
            report = not_available(std::string("no GPU task to measure: ") + e.what());
        }
    }
    std::cout << report.summary_line() << "\n";
    if (!o.energy_out.empty()) {
        nlohmann::ordered_json j;
        j["energy"] = report.to_json();
        j["task"] = {{"config", TaskConfig{}.to_json()}, {"data", data_description()},
                     {"tasks_at_once", o.energy_tasks}};
        j["git_commit"] = git_commit();
        const std::string text = j.dump(2) + "\n";
        io::write_file_atomic(o.energy_out, std::string_view(text));
    }
    return 0;
}

}  // namespace
}  // namespace revgraph::bench

int main(int argc, char** argv) {
    using namespace revgraph;
    using namespace revgraph::bench;
    parse_options(&argc, argv);
    int status = 0;
    try {
        if (g_options.energy) {
            status = energy_mode();
        } else {
            benchmark::Initialize(&argc, argv);
            if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
            std::vector<std::string> notes;
            const auto backends = discover_backends(&notes);
            for (const auto& n : notes) std::cerr << "revgraph_bench: " << n << "\n";
            if (backends.empty()) {
                std::cerr << "revgraph_bench: no backend to measure\n";
                return 2;
            }
            register_benchmarks(backends);
            benchmark::AddCustomContext("revgraph_commit", git_commit());
            benchmark::AddCustomContext("revgraph_version", version());
            benchmark::AddCustomContext("cpu_model", cpu::cpu_name());
            benchmark::AddCustomContext("cuda_device", cuda::describe_device());
            std::string names;
            for (const auto& b : backends) names += (names.empty() ? "" : ",") + b.name;
            benchmark::AddCustomContext("backends", names);
            benchmark::AddCustomContext("task", "rev88 (depth 2, batch 128, 2 epochs) on " + data_description());
            const TaskInputs& in = task_inputs();
            benchmark::AddCustomContext("train_images_sha256", io::sha256_hex(in.train_images));
            benchmark::AddCustomContext("train_labels_sha256", io::sha256_hex(in.train_labels));
            benchmark::AddCustomContext("test_images_sha256", io::sha256_hex(in.test_images));
            benchmark::AddCustomContext("timing", "manual: backend device time (CUDA events) where available, else wall "
                                                  "time of run() incl. synchronize; preparation and warm-up untimed");
            benchmark::AddCustomContext("flush_l2", g_options.flush_l2 ? flush_l2_description() : "off");
            benchmark::AddCustomContext("nvtx", kNvtxCompiledIn ? "ranges per task and phase" : "not compiled in");
            benchmark::AddCustomContext("programmatic_launch",
                                        Runtime::options().programmatic_launch ? "on (cuda-fused)" : "off");
            benchmark::RunSpecifiedBenchmarks();
            benchmark::Shutdown();
        }
    } catch (const std::exception& e) {
        std::cerr << "revgraph_bench: " << e.what() << "\n";
        status = 1;
    }
    g_slot.task.reset();  // GPU buffers go before the CUDA context does
    g_many = ManySlot{};
    release_gpu_hooks();
    return status;
}
