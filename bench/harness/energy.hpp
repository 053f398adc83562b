#pragma once
// GPU energy per task through NVML, loaded at run time (dlopen of libnvidia-ml.so.1): no
// build-time dependency, and on a machine without the NVIDIA driver every entry point says
// "not available" and why instead of failing. Host C++ only; no CUDA headers.
//
// Method (measure_energy), after the group's energy protocol (~20 s of tasks, ~10 s idle each side):
// warm tasks have already run; wait `settle_seconds` with nothing running (NVML's power reading is an
// average over about the last second on Hopper, so a sample taken right after GPU work still holds
// it); sample the idle power (nvmlDeviceGetPowerUsage) for `idle_seconds`; read the board's energy
// counter (nvmlDeviceGetTotalEnergyConsumption, mJ); run tasks back to back until at least
// `min_seconds` and `min_tasks`; read the counter again; settle and sample idle power again for
// `idle_after_seconds` (recorded only: the tail of the run can still be in it). Gross energy = the
// counter's delta; net = gross - idle power BEFORE x the tasks' duration; per task, both. The
// report records the window it used (seconds of tasks, of idle, of settling), so a shorter window
// than the protocol's is said, not hidden.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace revgraph::bench {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

class Nvml {
public:
    // Loads `library`, resolves the entry points, initialises NVML and picks the device: by PCI
    // bus id when one is given (the CUDA device the backend runs on), else by NVML index.
    // Returns nullptr and sets *why (one line) when any of that fails.
    static std::unique_ptr<Nvml> open(std::string* why, const std::string& library = kNvmlLibrary,
                                      const std::string& pci_bus_id = "", unsigned index = 0);
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    std::string device_name() const;
    // Energy since the driver was loaded, in millijoules (Volta and newer).
    std::optional<std::uint64_t> total_energy_mj(std::string* why = nullptr) const;
    // Board power in milliwatts (on recent GPUs an average over about one second).
    std::optional<unsigned> power_mw(std::string* why = nullptr) const;

    struct Api;

private:
    Nvml() = default;
    void* handle_ = nullptr;  // dlopen handle
    std::unique_ptr<Api> api_;
    void* device_ = nullptr;  // nvmlDevice_t
    bool initialized_ = false;
};

// Raw readings of one measurement; summarize() turns them into the report (pure arithmetic,
// tested without a GPU).
struct EnergySamples {
    std::vector<double> idle_before_watts;  // power samples before the run: the idle that is subtracted
    std::vector<double> idle_after_watts;   // and after it: recorded only
    std::uint64_t energy_start_mj = 0;
    std::uint64_t energy_end_mj = 0;
    double run_seconds = 0;            // wall time from the first counter read to the second
    std::vector<double> task_seconds;  // each round's time (one task: its device time where available)
    int tasks_per_round = 1;           // tasks run at once in each round (run_together)
    // The window as it was (seconds): settling before each idle window, and each idle window.
    double settle_seconds = 0, idle_before_seconds = 0, idle_after_seconds = 0;
};

struct EnergyReport {
    bool available = false;
    std::string reason;  // why not, when !available; notes otherwise
    std::string backend, device, nvml_device;
    int tasks = 0;
    int concurrent_tasks = 1;  // tasks per round; task_ms is then a round's wall time / this
    double run_seconds = 0;
    double idle_watts_before = 0, idle_watts_after = 0;
    double idle_watts = 0;  // subtracted: the mean of the samples before the run
    double total_joules = 0, idle_joules = 0, net_joules = 0;
    bool net_known = false;            // idle was sampled before the run (else only gross is known)
    double joules_per_task = 0;        // net of idle
    double gross_joules_per_task = 0;  // idle included
    double average_watts = 0;
    double task_ms_median = 0, task_ms_min = 0, task_ms_max = 0;
    double settle_seconds = 0, idle_before_seconds = 0, idle_after_seconds = 0;
    int idle_samples_before = 0, idle_samples_after = 0;

    nlohmann::ordered_json to_json() const;
    std::string summary_line() const;  // one human line: time and joules per task, or why not
};

EnergyReport summarize(const EnergySamples& samples);

// The group's protocol by default; tools/gpu-check passes a shorter window where its budget is short
// (the report says which window was used).
struct EnergyOptions {
    double settle_seconds = 3.0;       // nothing running before each idle window: NVML's ~1 s average empties
    double idle_seconds = 10.0;        // idle sampled before the tasks (subtracted)
    double idle_after_seconds = 10.0;  // and after them (recorded only); 0: none
    double min_seconds = 20.0;
    int min_tasks = 50;
    int max_tasks = 100000;
    double sample_interval_seconds = 0.02;
};

// What measure_energy reads and how it waits: NVML and the steady clock in a run (nvml_probe), made-up
// readings in the tests.
class EnergyProbe {
public:
    virtual ~EnergyProbe() = default;
    virtual std::optional<double> power_watts() = 0;
    virtual std::optional<std::uint64_t> energy_mj(std::string* why) = 0;
    virtual double now_seconds() = 0;
    virtual void sleep_seconds(double seconds) = 0;
};
std::unique_ptr<EnergyProbe> nvml_probe(const Nvml& nvml);

// `run_round` runs `tasks_per_round` complete tasks to completion (synchronised; one, or several
// at once) and returns the round's time in seconds. The caller has prepared and warmed them.
// min_tasks and max_tasks count tasks, not rounds.
EnergyReport measure_energy(EnergyProbe& probe, const std::function<double()>& run_round, const EnergyOptions& options,
                            int tasks_per_round = 1);
EnergyReport measure_energy(const Nvml& nvml, const std::function<double()>& run_round, const EnergyOptions& options,
                            int tasks_per_round = 1);

EnergyReport not_available(const std::string& reason);

}  // namespace revgraph::bench
