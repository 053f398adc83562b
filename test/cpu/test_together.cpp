// PreparedTask::run_together: many tasks at once (threads for the CPU backends) must give every
// task exactly the bytes of its own run(), and a failing task must not take the others down.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/error.hpp"
#include "engine/task.hpp"
#include "test/cpu/support.hpp"

using namespace revgraph;
using revgraph::test::check_byte_identical;
using revgraph::test::synthetic_inputs;

namespace {

struct Spec {
    const char* backend;
    int depth, batch;
    std::uint64_t seed;
};

// Five different tasks: both CPU backends, depths 1-3, two batch sizes, five seeds.
const std::vector<Spec> kSpecs = {{"cpu", 2, 8, 11},
                                  {"cpu-reference", 1, 32, 12},
                                  {"cpu", 3, 32, 13},
                                  {"cpu-reference", 2, 8, 14},
                                  {"cpu", 1, 8, 15}};

std::unique_ptr<PreparedTask> make_task(const Spec& s, std::unique_ptr<Backend> backend = nullptr) {
    TaskConfig c;
    c.depth = s.depth;
    c.batch_size = s.batch;
    c.seed = s.seed;
    return std::make_unique<PreparedTask>(synthetic_inputs(120, 30, 5), c,
                                          backend ? std::move(backend) : make_backend(s.backend));
}

std::vector<TaskOutputs> solo_outputs() {
    std::vector<TaskOutputs> out;
    for (const Spec& s : kSpecs) {
        auto t = make_task(s);
        t->run();
        out.push_back(t->outputs());
    }
    return out;
}

// The reference backend, except that epoch 1 fails: a task that breaks halfway through run().
class FailingBackend : public Backend {
public:
    std::string name() const override { return "failing"; }
    std::string device() const override { return inner_->device(); }
    void prepare(const PreparedInputs& p) override { inner_->prepare(p); }
    void reset() override { inner_->reset(); }
    void normalize() override { inner_->normalize(); }
    void epoch(int e) override {
        if (e == 1) throw Error("planned failure in epoch 1");
        inner_->epoch(e);
    }
    void predict() override { inner_->predict(); }
    void step(int e, int b) override { inner_->step(e, b); }
    TaskState read_state() override { return inner_->read_state(); }
    std::size_t retained_core_bytes() const override { return inner_->retained_core_bytes(); }

private:
    std::unique_ptr<Backend> inner_ = make_backend("cpu-reference");
};

}  // namespace

TEST_CASE("task: run_together gives every task the bytes of its own run(), with any number of threads") {
    const auto solo = solo_outputs();
    for (const unsigned threads : {1u, 2u, 3u, 0u}) {
        CAPTURE(threads);
        std::vector<std::unique_ptr<PreparedTask>> tasks;
        std::vector<PreparedTask*> list;
        for (const Spec& s : kSpecs) {
            tasks.push_back(make_task(s));
            list.push_back(tasks.back().get());
        }
        for (int round = 1; round <= 2; ++round) {  // and again: replays stay byte-identical
            CAPTURE(round);
            const double wall = PreparedTask::run_together(list, threads);
            CHECK(wall > 0);
            for (std::size_t k = 0; k < tasks.size(); ++k) {
                CAPTURE(k);
                CHECK(tasks[k]->run_count() == round);
                CHECK(tasks[k]->last_run_seconds() > 0);
                CHECK(tasks[k]->last_run_seconds() <= wall);
                check_byte_identical(tasks[k]->outputs(), solo[k]);
            }
        }
    }
}

TEST_CASE("task: run_together of nothing, of a null task and of a task listed twice") {
    CHECK(PreparedTask::run_together({}) >= 0);
    auto t = make_task(kSpecs[0]);
    CHECK_THROWS_WITH_AS(PreparedTask::run_together({t.get(), nullptr}), "task: run_together() of a null task", Error);
    CHECK_THROWS_WITH_AS(PreparedTask::run_together({t.get(), t.get()}),
                         "task: run_together() of a task listed twice (it would race with itself)", Error);
    CHECK(t->run_count() == 0);
}

TEST_CASE("task: a task failing in run_together is reported once every worker stopped; the others are unharmed") {
    const auto solo = solo_outputs();
    auto good0 = make_task(kSpecs[0]), good2 = make_task(kSpecs[2]);
    auto bad = make_task(kSpecs[1], std::make_unique<FailingBackend>());
    for (const unsigned threads : {1u, 3u}) {
        CAPTURE(threads);
        CHECK_THROWS_WITH_AS(PreparedTask::run_together({good0.get(), bad.get(), good2.get()}, threads),
                             "planned failure in epoch 1", Error);
        CHECK(bad->run_count() == 0);
    }
    PreparedTask::run_together({good0.get(), good2.get()}, 2);
    check_byte_identical(good0->outputs(), solo[0]);
    check_byte_identical(good2->outputs(), solo[2]);
}

TEST_CASE("task: after a failure in run_together no further task starts") {
    // One worker, the failing task first: it fails in its epoch 1, and the two after it never start
    // (they would each run every epoch of theirs before the call could throw).
    auto bad = make_task(kSpecs[1], std::make_unique<FailingBackend>());
    auto good0 = make_task(kSpecs[0]), good2 = make_task(kSpecs[2]);
    int epochs_seen = 0;
    CHECK_THROWS_WITH_AS(
        PreparedTask::run_together({bad.get(), good0.get(), good2.get()}, 1, [&](int) { ++epochs_seen; }),
        "planned failure in epoch 1", Error);
    CHECK(epochs_seen == 1);  // the failing task's epoch 0
    CHECK(good0->run_count() == 0);
    CHECK(good2->run_count() == 0);
}

TEST_CASE("task: an epoch hook that throws stops run() and run_together() there; the next run is whole") {
    const auto solo = solo_outputs();
    struct Stop {};
    auto t = make_task(kSpecs[0]), u = make_task(kSpecs[2]);
    int calls = 0;
    const auto stop_at_first = [&](int e) {
        ++calls;
        if (e == 0) throw Stop{};
    };
    CHECK_THROWS_AS(t->run(stop_at_first), Stop);
    CHECK(calls == 1);
    CHECK(t->run_count() == 0);
    calls = 0;
    CHECK_THROWS_AS(PreparedTask::run_together({t.get(), u.get()}, 1, stop_at_first), Stop);
    CHECK(calls == 1);
    t->run();
    PreparedTask::run_together({u.get()});
    check_byte_identical(t->outputs(), solo[0]);
    check_byte_identical(u->outputs(), solo[2]);
}
