#pragma once
// The benchmarks' data and prepared tasks: the task inputs (synthetic or --input), the backends to
// measure, and one prepared task (or set of tasks) at a time, prepared and warmed up untimed.
#include <string>
#include <vector>

#include "engine/inputs.hpp"
#include "engine/task.hpp"

namespace revgraph::bench {

struct BackendInfo {
    std::string request;  // the make_backend name
    std::string name;     // Backend::name()
    std::string device;
    bool gpu = false;
};

bool is_gpu_name(const std::string& name);

// The task's images and labels, made once: options().input or data::synthetic_task.
const TaskInputs& task_inputs();
std::string data_description();

// The backends options().backends names (default every one), each that can be built here once;
// `notes` says why the others are not measured.
std::vector<BackendInfo> discover_backends(std::vector<std::string>* notes);

// One prepared task at a time: benchmarks with the same backend and shape run one after the other
// (Google Benchmark calls a function several times while it sizes the iteration count), so they
// share the preparation and the warm-up; a new shape replaces the old task.
PreparedTask& prepared_task(const BackendInfo& b, int depth, int batch_size, int width = TaskConfig{}.width);
// The same for any config (--energy-config: a frontier entry's).
PreparedTask& prepared_task(const BackendInfo& b, const TaskConfig& config);
// `count` rev88 tasks on the same data with seeds 11, 12, ...: a seed sweep, as many people run one.
const std::vector<PreparedTask*>& prepared_tasks(const BackendInfo& b, int count);
// Frees every cached task (GPU buffers go before the CUDA context does).
void release_tasks();

}  // namespace revgraph::bench
