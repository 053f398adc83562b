// Host memory does not grow with the epoch count: each epoch's order is drawn when it is needed
// (rng::EpochOrders), with the bits epoch_permutations() gives. Peak RSS is measured around a
// whole task (prepare, run, outputs) with 2 and with 400 epochs; keeping every order, as
// before, cost 16 bytes per epoch and example (two copies): 12.8 MB more here.
#include "engine/backends.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/rng/epoch_orders.hpp"
#include "engine/rng/pcg64.hpp"
#include "test/cpu/support.hpp"
#include "test/peak_rss.hpp"

using revgraph::make_backend;
using revgraph::PreparedTask;
using revgraph::TaskConfig;

TEST_CASE("epoch orders: drawn when needed, the same bits as every permutation drawn up front") {
    const auto all = revgraph::rng::epoch_permutations(781, 37, 9);
    revgraph::rng::EpochOrders orders(781, 37, 9);
    REQUIRE(orders.size() == 9);
    for (std::size_t e = 0; e < 9; ++e) CHECK(orders[e] == all[e]);
    // Out of order: back to the start and forward again.
    for (const std::size_t e : {4u, 2u, 8u, 0u, 0u, 5u}) CHECK(orders.at(e) == all[e]);
    const revgraph::rng::EpochOrders copy = orders;  // a copy draws on its own
    CHECK(copy[3] == all[3]);
    CHECK(orders[6] == all[6]);
    CHECK_THROWS_AS(orders.at(9), revgraph::Error);
}

TEST_CASE("cpu: peak host memory does not grow with epochs") {
    const auto in = revgraph::test::synthetic_inputs(2000, 3, 5);
    TaskConfig c;
    c.depth = 1;
    c.batch_size = 2000;  // one step per epoch: the orders, not the steps, are what is measured
    auto task_peak = [&](int epochs, const std::string& backend) {
        c.epochs = epochs;
        return revgraph::test::peak_rss_growth([&] {
            PreparedTask task(in, c, make_backend(backend));
            task.run();
            CHECK(task.outputs().metadata["epoch_permutation_sha256"].size() == static_cast<std::size_t>(epochs));
        });
    };
    // The fast backend runs the task; the reference trainer (slower) keeps orders the same way and
    // is checked below, where preparing it used to copy every order once more.
    const long long few = task_peak(2, "cpu"), many = task_peak(400, "cpu");
    MESSAGE("cpu: peak RSS growth " << few / 1024 << " KiB with 2 epochs, " << many / 1024 << " KiB with 400 epochs");
    CHECK(many - few < 4 * 1024 * 1024);
    // The most epochs the config allows, on the default task's 5,000 examples: preparing keeps no
    // order (drawing them all up front took 40 GB, twice).
    c.epochs = 1000000;
    const auto big = revgraph::test::synthetic_inputs(5000, 3, 6);
    for (const std::string backend : {"cpu", "cpu-reference"}) {
        const long long prepared =
            revgraph::test::peak_rss_growth([&] { PreparedTask task(big, c, make_backend(backend)); });
        MESSAGE(backend << ": preparing 1,000,000 epochs of 5,000 examples: peak RSS growth " << prepared / 1024
                        << " KiB");
        CHECK(prepared < 16 * 1024 * 1024);
    }
}

TEST_CASE("cuda plan: resident permutations are bounded, refused in one line before any work") {
    TaskConfig c;
    c.epochs = 107374;  // x 5,000 examples x 4 bytes: just under 2 GiB
    CHECK_NOTHROW(revgraph::cuda::TaskPlan(c, 5000, 10));
    c.epochs = 107375;
    CHECK_THROWS_WITH_AS(revgraph::cuda::TaskPlan(c, 5000, 10),
                         "cuda: 107375 epochs x 5000 train examples need 2048 MiB of resident epoch permutations, over "
                         "the GPU backends' limit of 2048 MiB; use fewer epochs or the cpu backend, which draws each "
                         "epoch's order when it needs it",
                         revgraph::Error);
    c.epochs = 1000000;
    CHECK_THROWS_AS(revgraph::cuda::TaskPlan(c, 5000, 10), revgraph::Error);
}
