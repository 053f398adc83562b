// The energy report without a GPU: NVML missing or unusable must say why, and the arithmetic
// that turns counter readings into joules per task is checked on made-up readings.
#include <doctest/doctest.h>

#include "bench/energy.hpp"

using namespace revgraph::bench;

TEST_CASE("NVML that cannot be loaded is reported as not available, with the library named") {
    std::string why;
    auto nvml = Nvml::open(&why, "libnvidia-ml-does-not-exist.so.1");
    CHECK(nvml == nullptr);
    CHECK(why.find("NVML not available") == 0);
    CHECK(why.find("libnvidia-ml-does-not-exist.so.1") != std::string::npos);
}

TEST_CASE("a library without the NVML entry points is reported, not called") {
    std::string why;
    auto nvml = Nvml::open(&why, "libz.so.1");  // loadable (the engine links zlib), no NVML symbols
    CHECK(nvml == nullptr);
    CHECK(why.find("lacks nvmlInit_v2") != std::string::npos);
}

TEST_CASE("the default library either opens or says why not") {
    std::string why;
    auto nvml = Nvml::open(&why);
    if (nvml) {
        CHECK(nvml->total_energy_mj().has_value());
        MESSAGE("NVML present: " << nvml->device_name());
    } else {
        CHECK(why.rfind("NVML", 0) == 0);
        MESSAGE(why);
    }
}

TEST_CASE("joules per task subtract the mean idle power over the run") {
    EnergySamples s;
    s.idle_before_watts = {60, 60};
    s.idle_after_watts = {80};
    s.energy_start_mj = 1000;
    s.energy_end_mj = 11000;  // 10 J
    s.run_seconds = 0.1;      // idle 70 W x 0.1 s = 7 J
    s.task_seconds = {0.010, 0.012, 0.008, 0.010, 0.010, 0.011, 0.009, 0.010, 0.010, 0.010};
    const EnergyReport r = summarize(s);
    CHECK(r.available);
    CHECK(r.tasks == 10);
    CHECK(r.idle_watts == doctest::Approx(70));
    CHECK(r.total_joules == doctest::Approx(10));
    CHECK(r.idle_joules == doctest::Approx(7));
    CHECK(r.net_joules == doctest::Approx(3));
    CHECK(r.joules_per_task == doctest::Approx(0.3));
    CHECK(r.gross_joules_per_task == doctest::Approx(1.0));
    CHECK(r.average_watts == doctest::Approx(100));
    CHECK(r.task_ms_median == doctest::Approx(10));
    CHECK(r.task_ms_min == doctest::Approx(8));
    CHECK(r.task_ms_max == doctest::Approx(12));
    const auto j = r.to_json();
    CHECK(j["joules_per_task"].get<double>() == doctest::Approx(0.3));
    CHECK(r.summary_line().find("0.3000 J/task net of idle") != std::string::npos);
}

TEST_CASE("several tasks a round: joules and milliseconds per task, not per round") {
    EnergySamples s;
    s.idle_before_watts = {70};
    s.idle_after_watts = {70};
    s.energy_start_mj = 1000;
    s.energy_end_mj = 11000;  // 10 J
    s.run_seconds = 0.1;      // 7 J idle
    s.task_seconds = {0.040, 0.036, 0.044};
    s.tasks_per_round = 4;
    const EnergyReport r = summarize(s);
    CHECK(r.tasks == 12);
    CHECK(r.concurrent_tasks == 4);
    CHECK(r.joules_per_task == doctest::Approx(0.25));
    CHECK(r.gross_joules_per_task == doctest::Approx(10.0 / 12));
    CHECK(r.task_ms_median == doctest::Approx(10));
    CHECK(r.task_ms_min == doctest::Approx(9));
    CHECK(r.task_ms_max == doctest::Approx(11));
    CHECK(r.to_json()["concurrent_tasks"] == 4);
    CHECK(r.summary_line().find("12 tasks (4 at once)") != std::string::npos);
}

TEST_CASE("a run that does not rise above idle is flagged; a counter that goes back is refused") {
    EnergySamples s;
    s.idle_before_watts = {100};
    s.energy_start_mj = 0;
    s.energy_end_mj = 50;
    s.run_seconds = 1;
    s.task_seconds = {0.5, 0.5};
    auto r = summarize(s);
    CHECK(r.available);
    CHECK(r.reason.find("net energy <= 0") != std::string::npos);
    s.energy_start_mj = 100;
    r = summarize(s);
    CHECK_FALSE(r.available);
}

TEST_CASE("not available has a reason in the JSON and the summary line") {
    const auto r = not_available("NVML not available: cannot load x");
    const auto j = r.to_json();
    CHECK(j["available"] == false);
    CHECK(j["reason"] == "NVML not available: cannot load x");
    CHECK(r.summary_line() == "energy: not available: NVML not available: cannot load x");
}
