// --energy: joules per task through NVML instead of benchmarks (bench/harness/energy.hpp, NOTES.md).
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/harness/counters.hpp"
#include "bench/harness/families.hpp"
#include "bench/harness/gpu_hooks.hpp"
#include "bench/harness/options.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/timing.hpp"
#include "engine/backends.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/runtime_options.hpp"
#include "engine/version.hpp"

namespace revgraph::bench {

int energy_mode() {
    const Options& o = options();
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
                    PreparedTask& task = prepared_task(info, o.energy_config.value_or(TaskConfig{}));
                    report = measure_energy(
                        *nvml,
                        [&] {
                            NVTX_RANGE("energy task");
                            task.run();
                            return task.last_run_seconds();
                        },
                        o.energy_options);
                } else {
                    const std::vector<PreparedTask*>& tasks = prepared_tasks(info, o.energy_tasks);
                    report = measure_energy(
                        *nvml,
                        [&] {
                            NVTX_RANGE("energy tasks together");
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
        j["task"] = {{"config", o.energy_config.value_or(TaskConfig{}).to_json()},
                     {"data", data_description()},
                     {"tasks_at_once", o.energy_tasks}};
        j["git_commit"] = git_commit();
        const std::string text = j.dump(2) + "\n";
        io::write_file_atomic(o.energy_out, std::string_view(text));
    }
    return 0;
}

}  // namespace revgraph::bench
