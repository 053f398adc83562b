// RESULT.json's timing keys, assembled once (PreparedTask::outputs), and the one median they use.
#include <doctest/doctest.h>

#include <vector>

#include "engine/backends.hpp"
#include "engine/stats.hpp"
#include "engine/task.hpp"
#include "test/cpu/support.hpp"

using namespace revgraph;

TEST_CASE("stats: median of odd, even and no counts; summary") {
    CHECK(median({}) == 0.0);
    CHECK(median({3.0}) == 3.0);
    CHECK(median({5.0, 1.0, 3.0}) == 3.0);
    CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // the mean of the middle two
    const Summary s = summarize({0.25, 0.5, 0.125, 1.0});
    CHECK(s.median == 0.375);
    CHECK(s.min == 0.125);
    CHECK(s.max == 1.0);
    CHECK(s.runs == 4);
    CHECK(summarize({}).runs == 0);
}

TEST_CASE("outputs: one run's time, or the median of the runs it stands for") {
    TaskConfig c;
    c.epochs = 1;
    PreparedTask task(test::synthetic_inputs(40, 9, 3), c, make_backend("cpu"));
    task.run();
    task.run();  // a second run: the result is still the latest run's alone
    const auto one = task.outputs().metadata;
    CHECK(one["training_prediction_seconds_statistic"] == "single run");
    CHECK(one["training_prediction_seconds"].get<double>() == task.last_run_seconds());
    CHECK(one["run_seconds"] == nlohmann::ordered_json::array({task.last_run_seconds()}));
    CHECK(one["run_count"] == 2);

    const std::vector<double> times{0.004, 0.001, 0.003, 0.002};
    const auto many = task.outputs(times).metadata;
    CHECK(many["training_prediction_seconds_statistic"] == "median");
    CHECK(many["training_prediction_seconds"].get<double>() == 0.0025);
    CHECK(many["run_seconds"].get<std::vector<double>>() == times);  // in order, unsorted
    CHECK(many.back() == many["run_seconds"]);                       // the last key
    CHECK(many["predictions_sha256"] == one["predictions_sha256"]);
}
