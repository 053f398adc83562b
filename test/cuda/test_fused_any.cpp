// cuda-fused's step at any width (engine/cuda/fused_any/step.hpp), run on the CPU block after block
// with each phase as a loop, against cpu::Trainer<float>: the same bits after every step —
// parameters, momentum and gradients — and the same scores and predictions, at widths 82..1024,
// depths 1..8, batches 8..512, rows a block 1..3, parameters in shared or global memory, and with
// every block and every phase's items also run last to first (items that depended on each other,
// a race on a GPU, would change the bits).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "engine/cpu/trainer.hpp"
#include "engine/cuda/sequential_exec.hpp"  // a phase as a loop
#include "engine/cuda/fused_any/step.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/model/layout.hpp"
#include "engine/task.hpp"

using namespace revgraph;
namespace fa = revgraph::cuda::fused_any;

namespace {

// The device's buffers and the three kernels, on the host: what an entry or the backend uploads,
// then each launch as its blocks in a loop.
struct HostRun {
    const PreparedInputs& p;
    model::Layout layout;
    int rows_per_block, tile;
    bool staged;
    int batch;
    std::vector<float> param, velocity, grads, final_state, dscores, act, grad, scores, smem;
    std::vector<std::int32_t> labels, order;
    std::vector<std::int64_t> predictions;

    HostRun(const PreparedInputs& prepared, int per_block, int query_tile, bool stage)
        : p(prepared),
          layout(prepared.config.depth, prepared.config.width),
          rows_per_block(per_block),
          tile(query_tile),
          staged(stage) {
        const TaskInputs& in = *p.inputs;
        const int w = layout.width();
        const auto n = static_cast<int>(in.train_count()), q = static_cast<int>(in.test_count());
        batch = p.config.batch_size < n ? static_cast<int>(p.config.batch_size) : n;
        for (int i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>(in.train_labels[i]));
        param = p.initial_parameters;
        velocity.assign(param.size(), 0.0f);
        grads.assign(param.size(), 0.0f);
        final_state.resize(static_cast<std::size_t>(batch) * w);
        dscores.resize(static_cast<std::size_t>(batch) * model::kClasses);
        act.resize(static_cast<std::size_t>(layout.branch_count()) * batch * layout.half());
        grad.resize(act.size());
        scores.resize(static_cast<std::size_t>(q) * model::kClasses);
        predictions.resize(static_cast<std::size_t>(q));
    }

    fa::Args args() {
        fa::Args a{};
        a.depth = layout.depth();
        a.half = layout.half();
        a.params = static_cast<int>(layout.total());
        a.staged = staged ? 1 : 0;
        a.alpha = static_cast<float>(p.config.alpha);
        a.lr = static_cast<float>(p.config.learning_rate);
        a.momentum = static_cast<float>(p.config.momentum);
        a.weight_decay = static_cast<float>(p.config.weight_decay);
        a.labels = labels.data();
        a.param = param.data();
        a.velocity = velocity.data();
        a.grads = grads.data();
        a.final_state = final_state.data();
        a.dscores = dscores.data();
        a.act = act.data();
        a.grad = grad.data();
        a.slot = batch;
        a.scores = scores.data();
        a.predictions = predictions.data();
        return a;
    }

    // A block's shared memory, poisoned so that a phase reading what no phase wrote shows.
    float* fresh_smem(int scratch) {
        smem.assign(static_cast<std::size_t>((staged ? layout.total() : 0) + scratch), -12345.0f);
        return smem.data();
    }

    template <int kH>
    void step(int e, int b, bool reverse) {
        const auto& perm = p.permutations.at(static_cast<std::size_t>(e));
        order.assign(perm.begin(), perm.end());
        fa::Args a = args();
        const auto n = static_cast<int>(perm.size());
        a.first = b * static_cast<int>(p.config.batch_size);
        a.rows =
            n - a.first < static_cast<int>(p.config.batch_size) ? n - a.first : static_cast<int>(p.config.batch_size);
        a.order = order.data();
        a.pixels = p.inputs->train_images.data();
        a.rows_per_block = rows_per_block;
        const cuda::fused::SequentialExec ex{reverse};
        const int blocks = fa::blocks_for(a.rows, rows_per_block);
        for (int i = 0; i < blocks; ++i) {
            const int block = reverse ? blocks - 1 - i : i;
            fa::step_rows<kH>(ex, a, block, fresh_smem(fa::rows_scratch(2 * a.half + 1, rows_per_block)));
        }
        const int gblocks = fa::blocks_for(a.params, fa::kGradsItems);
        for (int i = 0; i < gblocks; ++i) fa::step_grads<kH>(ex, a, reverse ? gblocks - 1 - i : i);
    }

    template <int kH>
    void predict(bool reverse) {
        fa::Args a = args();
        a.rows = static_cast<int>(predictions.size());
        a.pixels = p.inputs->test_images.data();
        a.rows_per_block = tile;
        const cuda::fused::SequentialExec ex{reverse};
        const int blocks = fa::blocks_for(a.rows, tile);
        for (int i = 0; i < blocks; ++i)
            fa::predict<kH>(ex, a, reverse ? blocks - 1 - i : i, fresh_smem(fa::predict_scratch(2 * a.half + 1, tile)));
    }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
    int width, depth, batch, per_block, tile;
    bool staged, reverse;
};

// kH: the half width as a compile-time constant (the race entry's way), or 0 (read at run time).
template <int kH>
void check(const Shape& s, int n = 40, int q = 23, int epochs = 2) {
    CAPTURE(s.width);
    CAPTURE(s.depth);
    CAPTURE(s.batch);
    CAPTURE(s.per_block);
    CAPTURE(s.staged);
    CAPTURE(s.reverse);
    CAPTURE(kH);
    const data::TaskData task = data::synthetic_task(n, q, 2026 + static_cast<unsigned>(s.width));
    TaskConfig c;
    c.width = s.width;
    c.depth = s.depth;
    c.batch_size = s.batch;
    c.epochs = epochs;
    c.weight_decay = s.depth == 2 ? 0.01 : 0.0;  // both of sgd_update's paths
    const TaskInputs inputs(task.train_images, task.train_labels, task.test_images);
    const PreparedInputs prepared = prepare_inputs(inputs, c);
    cpu::Trainer<float> ref(prepared);
    ref.reset();
    ref.normalize();
    HostRun run(prepared, s.per_block, s.tile, s.staged);
    for (int e = 0; e < c.epochs; ++e)
        for (int b = 0; b < ref.batches_per_epoch(); ++b) {
            CAPTURE(e);
            CAPTURE(b);
            ref.step(e, b);
            run.step<kH>(e, b, s.reverse);
            REQUIRE(same_bits(run.grads, ref.gradients()));
            REQUIRE(same_bits(run.param, ref.parameters()));
            REQUIRE(same_bits(run.velocity, ref.velocity()));
        }
    ref.predict();
    run.predict<kH>(s.reverse);
    CHECK(same_bits(run.scores, ref.scores()));
    CHECK(run.predictions == ref.predictions());
}

}  // namespace

TEST_CASE("fused any-width step: the float32 trainer's bits at every width, run-time half") {
    for (const int width : {82, 84, 90, 128, 192, 256, 512, 1024})
        for (const bool reverse : {false, true})
            check<0>({width, 2, 8, 2, 16, width <= 256, reverse}, width >= 512 ? 20 : 40, 11, width >= 512 ? 1 : 2);
}

TEST_CASE("fused any-width step: compile-time half, as the race entry compiles it") {
    check<41>({82, 1, 512, 2, 16, true, false}, 600, 40, 2);  // the 12 % band's shape: one short batch
    check<41>({82, 2, 128, 3, 7, false, true}, 300, 30, 1);
    check<64>({128, 4, 128, 2, 16, true, false}, 260, 30, 1);  // the 5 % band's shape (width 128, depth 4)
    check<64>({128, 4, 8, 1, 5, true, true}, 30, 9, 2);
}

TEST_CASE("fused any-width step: depths, batches and launch shapes") {
    for (const int depth : {1, 2, 4, 8})
        for (const int batch : {8, 128, 512})
            check<0>({90, depth, batch, depth % 3 + 1, 9, depth != 4, depth == 2}, batch == 512 ? 530 : 150, 17, 1);
}
