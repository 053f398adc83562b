// An exported entry's CUDA text, compiled as host code (exported_on_host.hpp) and run on the CPU
// against the float32 trainer: its phases run block after block, each phase's items as a loop,
// forwards and backwards. Built at test time:
//   g++ -std=c++20 -ffp-contract=off -D__CUDACC_RTC__ -DEXPORTED_TEXT='"k.cuh"' -DHALF=41 host_check.cpp <engine
//   lib...>
// (__CUDACC_RTC__: the text's prelude is read as NVRTC reads it). -DLANES=L runs the text's step in
// sum order L (engine/model/sum_order.hpp) against the trainer in the same order; default 1, the
// entry's own. Run as host_check DEPTH WIDTH BATCH EPOCHS ALPHA LR: prints "bits equal" or the first
// difference (exit 1). With --layout it prints the offsets of Args's fields instead, which the test
// holds against the entry's ctypes structure.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/trainer.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/task.hpp"

#ifndef LANES
#define LANES 1
#endif

#include "test/export/exported_on_host.hpp"

namespace {

bool same(const std::vector<float>& a, const std::vector<float>& b, const char* what, int e, int s) {
    if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return true;
    std::printf("%s differ after epoch %d step %d\n", what, e, s);
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--layout") {
#define FIELD(f) std::printf("%s %zu\n", #f, offsetof(fa::Args, f))
        FIELD(depth);
        FIELD(half);
        FIELD(rows);
        FIELD(first);
        FIELD(rows_per_block);
        FIELD(staged);
        FIELD(slot);
        FIELD(params);
        FIELD(alpha);
        FIELD(lr);
        FIELD(momentum);
        FIELD(weight_decay);
        FIELD(order);
        FIELD(pixels);
        FIELD(labels);
        FIELD(param);
        FIELD(velocity);
        FIELD(grads);
        FIELD(final_state);
        FIELD(dscores);
        FIELD(act);
        FIELD(grad);
        FIELD(scores);
        FIELD(predictions);
        std::printf("sizeof %zu\n", sizeof(fa::Args));
        return 0;
    }
    if (argc != 7) {
        std::fprintf(stderr, "usage: host_check DEPTH WIDTH BATCH EPOCHS ALPHA LR | --layout\n");
        return 2;
    }
    revgraph::TaskConfig c;
    c.depth = std::atoi(argv[1]);
    c.width = std::atoi(argv[2]);
    c.batch_size = std::atoi(argv[3]);
    c.epochs = std::atoi(argv[4]);
    c.alpha = std::atof(argv[5]);
    c.learning_rate = std::atof(argv[6]);
    if (c.width / 2 != HALF) {
        std::fprintf(stderr, "host_check: built for half width %d, asked for width %d\n", HALF, c.width);
        return 2;
    }
    const int n = c.batch_size * 2 + 37, q = 45;  // two full batches and a short one
    const auto task = revgraph::data::synthetic_task(n, q, 2026);
    const revgraph::TaskInputs inputs(task.train_images, task.train_labels, task.test_images);
    const revgraph::PreparedInputs p = revgraph::prepare_inputs(inputs, c);
    revgraph::cpu::Trainer<float> ref(p, LANES);
    ref.reset();
    ref.normalize();
    for (const bool reverse : {false, true}) {
        ref.reset();
        const int h = c.width / 2, batch = c.batch_size < n ? c.batch_size : n;
        const int params = static_cast<int>(p.initial_parameters.size());
        std::vector<float> param = p.initial_parameters, velocity(params), grads(params), final_state(batch * c.width),
                           dscores(batch * 10), act(2 * c.depth * batch * h), grad(act.size()), scores(q * 10), smem;
        std::vector<std::int32_t> labels(task.train_labels.begin(), task.train_labels.end()), order;
        std::vector<std::int64_t> predictions(q);
        fa::Args a{};
        a.depth = c.depth;
        a.half = h;
        a.slot = batch;
        a.params = params;
        a.staged = reverse ? 0 : 1;
        a.alpha = static_cast<float>(c.alpha);
        a.lr = static_cast<float>(c.learning_rate);
        a.momentum = static_cast<float>(c.momentum);
        a.weight_decay = static_cast<float>(c.weight_decay);
        a.labels = labels.data();
        a.param = param.data();
        a.velocity = velocity.data();
        a.grads = grads.data();
        a.final_state = final_state.data();
        a.dscores = dscores.data();
        a.act = act.data();
        a.grad = grad.data();
        a.scores = scores.data();
        a.predictions = reinterpret_cast<decltype(a.predictions)>(predictions.data());
        const SequentialExec ex{reverse};
        for (int e = 0; e < c.epochs; ++e) {
            const auto& perm = p.permutations.at(static_cast<std::size_t>(e));
            order.assign(perm.begin(), perm.end());
            a.order = order.data();
            a.pixels = task.train_images.data();
            a.rows_per_block = 2;
            for (int s = 0; s < ref.batches_per_epoch(); ++s) {
                a.first = s * c.batch_size;
                a.rows = n - a.first < c.batch_size ? n - a.first : c.batch_size;
                for (int b = 0; b < (a.rows + 1) / 2; ++b) {
                    smem.assign(static_cast<std::size_t>(a.staged * params + 2 * (2 * (c.width + 1) + 31)),
                                -1e30f);  // step.hpp's rows_scratch
                    fa::step_rows<HALF, LANES>(ex, a, reverse ? (a.rows + 1) / 2 - 1 - b : b, smem.data());
                }
                for (int b = 0; b < (params + 255) / 256; ++b) fa::step_grads<HALF, LANES>(ex, a, b);
                ref.step(e, s);
                if (!same(grads, ref.gradients(), "gradients", e, s) ||
                    !same(param, ref.parameters(), "parameters", e, s) ||
                    !same(velocity, ref.velocity(), "momentum", e, s))
                    return 1;
            }
        }
        a.rows = q;
        a.pixels = task.test_images.data();
        a.rows_per_block = 16;
        for (int b = 0; b < (q + 15) / 16; ++b) {
            smem.assign(static_cast<std::size_t>(a.staged * params + 16 * (c.width + 1)), -1e30f);  // predict_scratch
            fa::predict<HALF, LANES>(ex, a, b, smem.data());
        }
        ref.predict();
        if (!same(scores, ref.scores(), "scores", c.epochs, 0)) return 1;
        if (predictions != ref.predictions()) {
            std::printf("predictions differ\n");
            return 1;
        }
    }
    std::printf("bits equal: width %d depth %d batch %d, %d epochs, %d sum lanes, in order and reversed\n", c.width,
                c.depth, c.batch_size, c.epochs, LANES);
    return 0;
}
