#include "bench/harness/energy.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <thread>
#include <type_traits>

#include "engine/stats.hpp"
#include "engine/timing.hpp"

namespace revgraph::bench {
namespace {

// The few NVML declarations used, from NVIDIA's public nvml.h (stable C ABI).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;

double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;

    std::string error(nvmlReturn_t r) const {
        const char* s = error_string ? error_string(r) : nullptr;
        return s ? std::string(s) + " (" + std::to_string(r) + ")" : "NVML error " + std::to_string(r);
    }
};

std::unique_ptr<Nvml> Nvml::open(std::string* why, const std::string& library, const std::string& pci_bus_id,
                                 unsigned index) {
    auto fail = [&](const std::string& reason) -> std::unique_ptr<Nvml> {
        if (why) *why = reason;
        return nullptr;
    };
    std::unique_ptr<Nvml> nvml(new Nvml());
    nvml->handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!nvml->handle_) {
        const char* e = ::dlerror();
        return fail("NVML not available: cannot load " + library + " (" + (e ? e : "dlopen failed") +
                    "); it comes with the NVIDIA driver, so this machine has no NVIDIA GPU driver");
    }
    nvml->api_ = std::make_unique<Api>();
    auto& a = *nvml->api_;
    std::string missing;
    auto resolve = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(nvml->handle_, name));
        if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    resolve(a.init, "nvmlInit_v2");
    resolve(a.shutdown, "nvmlShutdown");
    resolve(a.error_string, "nvmlErrorString");
    resolve(a.by_index, "nvmlDeviceGetHandleByIndex_v2");
    resolve(a.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    resolve(a.name, "nvmlDeviceGetName");
    resolve(a.energy, "nvmlDeviceGetTotalEnergyConsumption");
    resolve(a.power, "nvmlDeviceGetPowerUsage");
    if (!missing.empty()) return fail("NVML not available: " + library + " lacks " + missing);

    if (const nvmlReturn_t r = a.init(); r != NVML_SUCCESS)
        return fail("NVML not available: nvmlInit failed: " + a.error(r));
    nvml->initialized_ = true;
    nvmlDevice_t device = nullptr;
    const nvmlReturn_t r = pci_bus_id.empty() ? a.by_index(index, &device) : a.by_pci(pci_bus_id.c_str(), &device);
    if (r != NVML_SUCCESS)
        return fail("NVML has no device " + (pci_bus_id.empty() ? "index " + std::to_string(index) : pci_bus_id) +
                    ": " + a.error(r));
    nvml->device_ = device;
    std::string energy_why;
    if (!nvml->total_energy_mj(&energy_why))
        return fail("NVML cannot read the energy counter of " + nvml->device_name() + ": " + energy_why +
                    " (nvmlDeviceGetTotalEnergyConsumption needs Volta or newer)");
    return nvml;
}

Nvml::~Nvml() {
    if (initialized_ && api_ && api_->shutdown) api_->shutdown();
    if (handle_) ::dlclose(handle_);
}

std::string Nvml::device_name() const {
    char buf[96] = {};
    if (api_->name(device_, buf, sizeof buf) != NVML_SUCCESS) return "unknown NVML device";
    return buf;
}

std::optional<std::uint64_t> Nvml::total_energy_mj(std::string* why) const {
    unsigned long long mj = 0;
    if (const nvmlReturn_t r = api_->energy(device_, &mj); r != NVML_SUCCESS) {
        if (why) *why = api_->error(r);
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(mj);
}

std::optional<unsigned> Nvml::power_mw(std::string* why) const {
    unsigned mw = 0;
    if (const nvmlReturn_t r = api_->power(device_, &mw); r != NVML_SUCCESS) {
        if (why) *why = api_->error(r);
        return std::nullopt;
    }
    return mw;
}

EnergyReport summarize(const EnergySamples& s) {
    EnergyReport r;
    r.available = true;
    const int per_round = std::max(1, s.tasks_per_round);
    r.concurrent_tasks = per_round;
    r.tasks = static_cast<int>(s.task_seconds.size()) * per_round;
    r.run_seconds = s.run_seconds;
    r.settle_seconds = s.settle_seconds;
    r.idle_before_seconds = s.idle_before_seconds;
    r.idle_after_seconds = s.idle_after_seconds;
    r.idle_samples_before = static_cast<int>(s.idle_before_watts.size());
    r.idle_samples_after = static_cast<int>(s.idle_after_watts.size());
    r.idle_watts_before = mean(s.idle_before_watts);
    r.idle_watts_after = mean(s.idle_after_watts);
    // Only the idle before the run is subtracted: NVML's power is a ~1 s average, so samples after
    // the run can still hold its tail and would make the net figure too low.
    r.net_known = !s.idle_before_watts.empty();
    r.idle_watts = r.idle_watts_before;
    r.total_joules = static_cast<double>(s.energy_end_mj - s.energy_start_mj) / 1e3;
    r.idle_joules = r.net_known ? r.idle_watts * s.run_seconds : 0.0;
    r.net_joules = r.total_joules - r.idle_joules;
    if (r.tasks > 0) {
        r.joules_per_task = r.net_joules / r.tasks;
        r.gross_joules_per_task = r.total_joules / r.tasks;
        r.task_ms_median = median(s.task_seconds) * 1e3 / per_round;
        r.task_ms_min = *std::min_element(s.task_seconds.begin(), s.task_seconds.end()) * 1e3 / per_round;
        r.task_ms_max = *std::max_element(s.task_seconds.begin(), s.task_seconds.end()) * 1e3 / per_round;
    }
    if (s.run_seconds > 0) r.average_watts = r.total_joules / s.run_seconds;
    if (s.energy_end_mj < s.energy_start_mj) {
        r.available = false;
        r.reason = "the energy counter went backwards (driver reloaded during the run?)";
    } else if (r.tasks == 0) {
        r.available = false;
        r.reason = "no task ran between the counter's readings";
    } else if (!r.net_known) {
        r.reason = "no idle sample before the run: gross joules only";
    } else if (r.net_joules <= 0) {
        r.reason = "net energy <= 0: the run did not rise measurably above idle; use more tasks";
    }
    return r;
}

EnergyReport not_available(const std::string& reason) {
    EnergyReport r;
    r.available = false;
    r.reason = reason;
    return r;
}

namespace {

std::vector<double> sample_power(EnergyProbe& probe, double seconds, double interval) {
    std::vector<double> watts;
    if (seconds <= 0) return watts;
    const double start = probe.now_seconds();
    do {
        if (const auto w = probe.power_watts()) watts.push_back(*w);
        probe.sleep_seconds(interval);
    } while (probe.now_seconds() - start < seconds);
    return watts;
}

class NvmlProbe final : public EnergyProbe {
public:
    explicit NvmlProbe(const Nvml& nvml) : nvml_(nvml), start_(Clock::now()) {}
    std::optional<double> power_watts() override {
        const auto mw = nvml_.power_mw();
        return mw ? std::optional<double>(*mw / 1e3) : std::nullopt;
    }
    std::optional<std::uint64_t> energy_mj(std::string* why) override { return nvml_.total_energy_mj(why); }
    double now_seconds() override { return seconds_since(start_); }
    void sleep_seconds(double seconds) override { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

private:
    const Nvml& nvml_;
    Clock::time_point start_;
};

}  // namespace

std::unique_ptr<EnergyProbe> nvml_probe(const Nvml& nvml) { return std::make_unique<NvmlProbe>(nvml); }

EnergyReport measure_energy(EnergyProbe& probe, const std::function<double()>& run_round, const EnergyOptions& o,
                            int tasks_per_round) {
    EnergySamples s;
    s.tasks_per_round = std::max(1, tasks_per_round);
    const auto tasks = [&] { return static_cast<int>(s.task_seconds.size()) * s.tasks_per_round; };
    // 1. Nothing runs while NVML's averaging window empties of the warm-up, then idle is sampled.
    double t = probe.now_seconds();
    probe.sleep_seconds(o.settle_seconds);
    s.settle_seconds = probe.now_seconds() - t;
    t = probe.now_seconds();
    s.idle_before_watts = sample_power(probe, o.idle_seconds, o.sample_interval_seconds);
    s.idle_before_seconds = probe.now_seconds() - t;
    // 2. The tasks, back to back, between two readings of the energy counter.
    std::string why;
    const auto e0 = probe.energy_mj(&why);
    if (!e0) return not_available("energy counter read failed: " + why);
    const double start = probe.now_seconds();
    while (tasks() < o.max_tasks && (tasks() < o.min_tasks || probe.now_seconds() - start < o.min_seconds))
        s.task_seconds.push_back(run_round());
    const auto e1 = probe.energy_mj(&why);
    s.run_seconds = probe.now_seconds() - start;
    if (!e1) return not_available("energy counter read failed: " + why);
    // 3. Idle after, settled the same way: recorded beside the idle before, never subtracted.
    if (o.idle_after_seconds > 0) {
        probe.sleep_seconds(o.settle_seconds);
        t = probe.now_seconds();
        s.idle_after_watts = sample_power(probe, o.idle_after_seconds, o.sample_interval_seconds);
        s.idle_after_seconds = probe.now_seconds() - t;
    }
    s.energy_start_mj = *e0;
    s.energy_end_mj = *e1;
    return summarize(s);
}

EnergyReport measure_energy(const Nvml& nvml, const std::function<double()>& run_round, const EnergyOptions& o,
                            int tasks_per_round) {
    const auto probe = nvml_probe(nvml);
    EnergyReport r = measure_energy(*probe, run_round, o, tasks_per_round);
    r.nvml_device = nvml.device_name();
    return r;
}

nlohmann::ordered_json EnergyReport::to_json() const {
    nlohmann::ordered_json j;
    j["available"] = available;
    if (!reason.empty()) j[available ? "note" : "reason"] = reason;
    if (!backend.empty()) j["backend"] = backend;
    if (!device.empty()) j["device"] = device;
    if (!available) return j;
    j["nvml_device"] = nvml_device;
    j["tasks"] = tasks;
    j["concurrent_tasks"] = concurrent_tasks;
    j["run_seconds"] = run_seconds;
    // With several tasks at once: a round's wall time divided by the tasks in it.
    j["task_ms"] = {{"median", task_ms_median}, {"min", task_ms_min}, {"max", task_ms_max}};
    j["idle_watts"] = {{"before", idle_watts_before}, {"after", idle_watts_after}, {"used", idle_watts}};
    j["average_watts"] = average_watts;
    j["total_joules"] = total_joules;
    const nlohmann::ordered_json unknown;  // null where no idle was sampled before the run
    j["idle_joules"] = net_known ? nlohmann::ordered_json(idle_joules) : unknown;
    j["net_joules"] = net_known ? nlohmann::ordered_json(net_joules) : unknown;
    j["joules_per_task"] = net_known ? nlohmann::ordered_json(joules_per_task) : unknown;
    j["gross_joules_per_task"] = gross_joules_per_task;
    j["window"] = {{"tasks_seconds", run_seconds},
                   {"settle_seconds_before_each_idle", settle_seconds},
                   {"idle_before_seconds", idle_before_seconds},
                   {"idle_after_seconds", idle_after_seconds},
                   {"idle_samples_before", idle_samples_before},
                   {"idle_samples_after", idle_samples_after},
                   {"protocol", "the group's: ~20 s of tasks, ~10 s of idle each side"}};
    j["method"] =
        "nvmlDeviceGetTotalEnergyConsumption before/after back-to-back tasks (gross); net = gross - idle power x "
        "the tasks' duration, idle = mean nvmlDeviceGetPowerUsage sampled BEFORE the tasks, after a settle with "
        "nothing running (NVML's power is a ~1 s average on Hopper); idle after recorded, not subtracted";
    return j;
}

std::string EnergyReport::summary_line() const {
    std::ostringstream o;
    if (!available) {
        o << "energy: not available: " << reason;
        return o.str();
    }
    char net[32] = "unknown";
    if (net_known) std::snprintf(net, sizeof net, "%.4f", joules_per_task);
    char buf[480];
    std::snprintf(buf, sizeof buf,
                  "energy: %s on %s: %d tasks (%d at once) in %.2f s, %.3f ms a task median; %s J/task net "
                  "of idle (%.4f J/task gross; idle %.1f W before (%.1f s, after %.1f s settling), %.1f W after; "
                  "%.1f W average)",
                  backend.c_str(), nvml_device.c_str(), tasks, concurrent_tasks, run_seconds, task_ms_median, net,
                  gross_joules_per_task, idle_watts_before, idle_before_seconds, settle_seconds, idle_watts_after,
                  average_watts);
    o << buf;
    if (!reason.empty()) o << "; note: " << reason;
    return o.str();
}

}  // namespace revgraph::bench
