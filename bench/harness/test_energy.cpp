// The energy report without a GPU: NVML missing or unusable must say why, and the arithmetic
// that turns counter readings into joules per task is checked on made-up readings.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "bench/harness/energy.hpp"

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

TEST_CASE("joules per task subtract the idle power sampled before the run; the idle after is only recorded") {
    EnergySamples s;
    s.idle_before_watts = {60, 60};
    s.idle_after_watts = {80};  // the run's tail in NVML's ~1 s average: must not be subtracted
    s.energy_start_mj = 1000;
    s.energy_end_mj = 11000;  // 10 J
    s.run_seconds = 0.1;      // idle 60 W x 0.1 s = 6 J
    s.task_seconds = {0.010, 0.012, 0.008, 0.010, 0.010, 0.011, 0.009, 0.010, 0.010, 0.010};
    s.settle_seconds = 3;
    s.idle_before_seconds = 10;
    s.idle_after_seconds = 5;
    const EnergyReport r = summarize(s);
    CHECK(r.available);
    CHECK(r.net_known);
    CHECK(r.tasks == 10);
    CHECK(r.idle_watts == doctest::Approx(60));
    CHECK(r.idle_watts_after == doctest::Approx(80));
    CHECK(r.total_joules == doctest::Approx(10));
    CHECK(r.idle_joules == doctest::Approx(6));
    CHECK(r.net_joules == doctest::Approx(4));
    CHECK(r.joules_per_task == doctest::Approx(0.4));
    CHECK(r.gross_joules_per_task == doctest::Approx(1.0));
    CHECK(r.average_watts == doctest::Approx(100));
    CHECK(r.task_ms_median == doctest::Approx(10));
    CHECK(r.task_ms_min == doctest::Approx(8));
    CHECK(r.task_ms_max == doctest::Approx(12));
    const auto j = r.to_json();
    CHECK(j["joules_per_task"].get<double>() == doctest::Approx(0.4));
    CHECK(j["gross_joules_per_task"].get<double>() == doctest::Approx(1.0));
    CHECK(j["window"]["tasks_seconds"].get<double>() == doctest::Approx(0.1));
    CHECK(j["window"]["idle_before_seconds"].get<double>() == doctest::Approx(10));
    CHECK(j["window"]["idle_after_seconds"].get<double>() == doctest::Approx(5));
    CHECK(j["window"]["settle_seconds_before_each_idle"].get<double>() == doctest::Approx(3));
    CHECK(j["window"]["idle_samples_before"] == 2);
    CHECK(r.summary_line().find("0.4000 J/task net of idle (1.0000 J/task gross") != std::string::npos);
}

TEST_CASE("without idle sampled before the run only the gross figure is given") {
    EnergySamples s;
    s.idle_after_watts = {70};
    s.energy_start_mj = 0;
    s.energy_end_mj = 5000;
    s.run_seconds = 1;
    s.task_seconds = {0.1, 0.1};
    const EnergyReport r = summarize(s);
    CHECK(r.available);
    CHECK_FALSE(r.net_known);
    CHECK(r.gross_joules_per_task == doctest::Approx(2.5));
    CHECK(r.reason.find("gross joules only") != std::string::npos);
    const auto j = r.to_json();
    CHECK(j["joules_per_task"].is_null());
    CHECK(j["net_joules"].is_null());
    CHECK(r.summary_line().find("unknown J/task net") != std::string::npos);
}

namespace {
// A made-up board: the power is `idle` watts except while a task runs (`busy` watts); NVML's power
// reading is the mean over the last `average` seconds, as on Hopper; its energy counter is exact.
// The clock moves only when the measurement sleeps or a task runs.
struct FakeBoard final : EnergyProbe {
    double idle = 70, busy = 400, average = 1.0, now = 0;
    std::vector<std::pair<double, double>> busy_spans;  // [start, end)
    std::vector<double> task_starts, power_reads;

    double busy_within(double a, double b) const {
        double t = 0;
        for (const auto& [s, e] : busy_spans) t += std::max(0.0, std::min(b, e) - std::max(a, s));
        return t;
    }
    double joules(double a, double b) const { return idle * (b - a) + (busy - idle) * busy_within(a, b); }
    std::optional<double> power_watts() override {
        power_reads.push_back(now);
        return joules(now - average, now) / average;
    }
    std::optional<std::uint64_t> energy_mj(std::string*) override {
        return static_cast<std::uint64_t>(std::llround(joules(0, now) * 1e3));
    }
    double now_seconds() override { return now; }
    void sleep_seconds(double s) override { now += s; }
    double run(double seconds) {  // one task: busy for `seconds`
        task_starts.push_back(now);
        busy_spans.emplace_back(now, now + seconds);
        now += seconds;
        return seconds;
    }
};

EnergyOptions window(double settle) {
    EnergyOptions o;
    o.settle_seconds = settle;
    o.idle_seconds = 2;
    o.idle_after_seconds = 2;
    o.min_seconds = 4;
    o.min_tasks = 10;
    o.sample_interval_seconds = 0.1;
    return o;
}
}  // namespace

TEST_CASE("idle is read before any task, after a settle; with it the net joules are the tasks' own") {
    FakeBoard board;
    board.busy_spans.emplace_back(0, 5);  // preparation and warm-up just ended
    board.now = 5;
    const EnergyReport r = measure_energy(
        board, [&] { return board.run(0.002); }, window(3));
    REQUIRE(r.available);
    CHECK(r.net_known);
    // Every idle sample was taken after the settle and before the first task.
    CHECK(board.power_reads.front() >= 5 + 3);
    const double first_task = board.task_starts.front();
    int before = 0;
    for (double t : board.power_reads) before += t <= first_task ? 1 : 0;
    CHECK(before == r.idle_samples_before);
    CHECK(r.idle_samples_before >= 20);
    CHECK(r.idle_watts_before == doctest::Approx(70));
    CHECK(r.tasks == 2000);  // 4 s of 2 ms tasks
    CHECK(r.run_seconds == doctest::Approx(4));
    CHECK(r.joules_per_task == doctest::Approx(0.002 * (400 - 70)).epsilon(1e-3));
    CHECK(r.gross_joules_per_task == doctest::Approx(0.002 * 400).epsilon(1e-3));
    // After the run, settled the same way: idle again, recorded.
    CHECK(r.idle_watts_after == doctest::Approx(70));
    CHECK(r.idle_after_seconds >= 2);
    CHECK(r.settle_seconds == doctest::Approx(3));
}

TEST_CASE("without the settle, NVML's one-second average carries the warm-up into idle and the net is too low") {
    FakeBoard board;
    board.busy_spans.emplace_back(0, 5);
    board.now = 5;
    const EnergyReport r = measure_energy(
        board, [&] { return board.run(0.002); }, window(0));
    REQUIRE(r.available);
    CHECK(r.idle_watts_before > 70 + 10);  // the first second of samples still averages the warm-up
    CHECK(r.joules_per_task < 0.002 * (400 - 70) * 0.97);
}

TEST_CASE("a counter that cannot be read makes the report not available") {
    struct Broken final : EnergyProbe {
        double now = 0;
        std::optional<double> power_watts() override { return 50.0; }
        std::optional<std::uint64_t> energy_mj(std::string* why) override {
            *why = "Not Supported (3)";
            return std::nullopt;
        }
        double now_seconds() override { return now; }
        void sleep_seconds(double s) override { now += s; }
    } broken;
    int ran = 0;
    const EnergyReport r = measure_energy(
        broken, [&] { return ++ran, 0.001; }, window(1));
    CHECK_FALSE(r.available);
    CHECK(r.reason.find("Not Supported (3)") != std::string::npos);
    CHECK(ran == 0);
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
