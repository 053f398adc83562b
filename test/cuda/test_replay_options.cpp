// validate::gpu_repeatability's replay options on a CPU backend (no GPU needed): the cold replays
// run after the caller's hook (gpu_validation passes an L2 flush), are timed apart and must give
// the first replay's bytes; the report names the sha256 of the inputs it ran on, the same keys and
// values as RESULT.json's, so gpu-check can show every contender read one draw.
#include <doctest/doctest.h>

#include <string>

#include "engine/cuda/device.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/io/sha256.hpp"
#include "engine/validate/gpu_replay.hpp"

using namespace revgraph;

TEST_CASE("cold replays run after the hook, are timed apart and repeat the first replay's bytes") {
    const auto d = data::synthetic_task(64, 16, 5);
    const TaskInputs inputs = validate::synthetic_inputs(64, 16, 5);
    TaskConfig config;
    config.epochs = 1;
    int hooks = 0;
    validate::ReplayOptions replay;
    replay.replays = 3;
    replay.cold_replays = 2;
    replay.before_cold = [&hooks] { ++hooks; };
    const auto r = validate::gpu_repeatability(inputs, config, replay, "cpu");
    CHECK(hooks == 2);
    CHECK(r["passed"] == true);
    CHECK(r["byte_identical_replays"] == 5);
    CHECK(r["replays"] == 3);
    CHECK(r["cold_replays"] == 2);
    CHECK(r["task_ms"]["runs"] == 3);
    CHECK(r["task_ms_cold"]["runs"] == 2);
    CHECK(r["input_hashes"]["train_images"] == io::sha256_hex(d.train_images));
    CHECK(r["input_hashes"]["train_labels"] == io::sha256_hex(d.train_labels));
    CHECK(r["input_hashes"]["test_images"] == io::sha256_hex(d.test_images));

    replay.cold_replays = 0;
    const auto warm = validate::gpu_repeatability(inputs, config, replay, "cpu");
    CHECK_FALSE(warm.contains("task_ms_cold"));
    CHECK(warm["state_vector_sha256"] == r["state_vector_sha256"]);
}

TEST_CASE("replay options that cannot run are refused before any work") {
    const TaskInputs inputs = validate::synthetic_inputs(19, 7, 1);
    TaskConfig config;
    validate::ReplayOptions replay;
    replay.replays = 0;
    CHECK_THROWS_AS(validate::gpu_repeatability(inputs, config, replay, "cpu"), Error);
    replay.replays = 1;
    replay.cold_replays = -1;
    CHECK_THROWS_AS(validate::gpu_repeatability(inputs, config, replay, "cpu"), Error);
    replay.cold_replays = 1;  // and no hook
    CHECK_THROWS_AS(validate::gpu_repeatability(inputs, config, replay, "cpu"), Error);
}

TEST_CASE("gpu_validation without a GPU says so and runs nothing, whatever the options") {
    // What a machine without a device (CI's) answers; on a GPU machine gpu_validation runs for real
    // (the gpu suite's gpu-validation test), so there is nothing here to hold.
    if (cuda::device_count() > 0) return;
    validate::GpuValidationOptions o;
    o.backend = "cuda-fused";
    o.replay.cold_replays = 3;
    o.replay.before_cold = [] { FAIL("no replay may run without a GPU"); };
    const auto r = validate::gpu_validation(o);
    CHECK(r["run"] == false);
    CHECK(r["passed"].is_null());
    REQUIRE(r["reason"].is_string());
    CHECK(r["reason"].get<std::string>() == cuda::describe_device());
    CHECK_FALSE(r["reason"].get<std::string>().empty());
}
