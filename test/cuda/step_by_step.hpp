#pragma once
// The emulator's step-by-step check against the float32 reference trainer, shared by the plan's
// tests at width 82 (test_plan.cpp) and at the other widths (test_plan_widths.cpp).
#include <doctest/doctest.h>

#include "engine/cpu/trainer.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/cuda/task_plan.hpp"

namespace revgraph::cuda::testing {

// A whole task on the emulator and the float reference trainer side by side: every step's
// gradients, parameters and momentum, then the predictions, must be the same bits. Returns the steps.
inline int run_step_by_step(Emulator& emu, const TaskPlan& plan, cpu::Trainer<float>& ref) {
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    ref.reset();
    ref.normalize();
    CHECK(emu.f32(Buf::params) == ref.parameters());
    int steps = 0;
    for (int e = 0; e < plan.config().epochs; ++e) {
        emu.execute(plan.epoch_start(e));
        for (int b = 0; b < static_cast<int>(plan.batches().size()); ++b) {
            CAPTURE(e);
            CAPTURE(b);
            emu.execute(plan.step(b));
            ref.step(e, b);
            REQUIRE(emu.f32(Buf::grads) == ref.gradients());
            REQUIRE(emu.f32(Buf::params) == ref.parameters());
            REQUIRE(emu.f32(Buf::velocity) == ref.velocity());
            ++steps;
        }
    }
    emu.execute(plan.predict());
    ref.predict();
    CHECK(emu.f32(Buf::query_scores) == ref.scores());
    CHECK(emu.i64(Buf::predictions) == ref.predictions());
    return steps;
}

}  // namespace revgraph::cuda::testing
