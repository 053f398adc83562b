#include "bench/harness/task_cache.hpp"

#include <algorithm>
#include <memory>

#include "bench/harness/options.hpp"
#include "engine/backends.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/task_files.hpp"

namespace revgraph::bench {
namespace {

int warmup_runs(const BackendInfo& b) { return options().warmup >= 0 ? options().warmup : (b.gpu ? 10 : 1); }

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

}  // namespace

bool is_gpu_name(const std::string& name) {
    const BackendRow* row = find_backend(name);
    return row && row->gpu;
}

const TaskInputs& task_inputs() {
    static const TaskInputs inputs = [] {
        const Options& o = options();
        if (!o.input.empty()) return read_task_inputs(o.input);
        data::TaskData d = data::synthetic_task(o.train, o.query, o.data_seed);
        return TaskInputs{std::move(d.train_images), std::move(d.train_labels), std::move(d.test_images)};
    }();
    return inputs;
}

std::string data_description() {
    const Options& o = options();
    if (!o.input.empty()) return o.input;
    // Byte for byte tools/make_synthetic.py's draw for the same sizes and seed (engine/data/synthetic.hpp).
    return "data::synthetic_task(" + std::to_string(o.train) + ", " + std::to_string(o.query) + ", " +
           std::to_string(o.data_seed) + ")";
}

std::vector<BackendInfo> discover_backends(std::vector<std::string>* notes) {
    std::vector<std::string> requests = options().backends;
    if (requests.empty())  // every backend of the table once (an alias only picks one of them)
        for (const BackendRow& row : backend_table())
            if (!row.alias) requests.push_back(row.requested);
    std::vector<BackendInfo> found;
    for (const auto& request : requests) {
        if (const BackendRow* row = find_backend(request); row && !row->unbuildable().empty()) {
            notes->push_back(request + ": not measured (" + row->unbuildable() + ")");
            continue;
        }
        try {
            auto backend = make_backend(request);
            BackendInfo info{request, backend->name(), backend->device(), is_gpu_name(backend->name())};
            const auto same =
                std::find_if(found.begin(), found.end(), [&](const BackendInfo& f) { return f.name == info.name; });
            if (same != found.end()) {
                notes->push_back(request + ": the same backend as " + same->request + " (" + info.name +
                                 ") in this build; measured once");
                continue;
            }
            found.push_back(info);
        } catch (const std::exception& e) { notes->push_back(request + ": not measured (" + e.what() + ")"); }
    }
    return found;
}

PreparedTask& prepared_task(const BackendInfo& b, int depth, int batch_size, int width) {
    TaskConfig config;  // rev88
    config.depth = depth;
    config.batch_size = batch_size;
    config.width = width;
    return prepared_task(b, config);
}

PreparedTask& prepared_task(const BackendInfo& b, const TaskConfig& config) {
    const std::string key = b.request + "/" + config.to_json().dump();
    if (g_slot.task && g_slot.key == key) return *g_slot.task;
    g_slot.task.reset();  // free the previous shape's buffers first
    g_slot.key.clear();
    g_many = ManySlot{};
    auto task = std::make_unique<PreparedTask>(task_inputs(), config, make_backend(b.request));
    {
        NVTX_RANGE("bench warm-up");
        for (int i = 0; i < warmup_runs(b); ++i) task->run();
    }
    g_slot.task = std::move(task);
    g_slot.key = key;
    return *g_slot.task;
}

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
        NVTX_RANGE("bench warm-up");
        for (int i = 0; i < warmup_runs(b); ++i) PreparedTask::run_together(slot.list);
    }
    slot.key = key;
    g_many = std::move(slot);
    return g_many.list;
}

void release_tasks() {
    g_slot.task.reset();
    g_slot.key.clear();
    g_many = ManySlot{};
}

}  // namespace revgraph::bench
