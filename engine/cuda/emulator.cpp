#include "engine/cuda/emulator.hpp"

#include <algorithm>
#include <limits>

#include "engine/cuda/elementwise.hpp"
#include "engine/cuda/fused_args.hpp"
#include "engine/error.hpp"

namespace revgraph::cuda {

void host_gemm(const GemmSpec& s, const float* a0, const float* b0, float* d0) {
    for (int q = 0; q < s.batch; ++q) {
        const float* a = a0 + q * s.stride_a;
        const float* b = b0 + q * s.stride_b;
        float* d = d0 + q * s.stride_d;
        const auto at_a = [&](int i, int p) {
            return s.trans_a ? a[static_cast<std::size_t>(i) * s.lda + p] : a[static_cast<std::size_t>(p) * s.lda + i];
        };
        const auto at_b = [&](int p, int j) {
            return s.trans_b ? b[static_cast<std::size_t>(p) * s.ldb + j] : b[static_cast<std::size_t>(j) * s.ldb + p];
        };
        for (int j = 0; j < s.n; ++j)
            for (int i = 0; i < s.m; ++i) {
                float acc = 0.0f;
                for (int p = 0; p < s.k; ++p) acc += at_a(i, p) * at_b(p, j);
                d[static_cast<std::size_t>(j) * s.ldd + i] = s.alpha * acc;
            }
    }
}

Emulator::Emulator(const TaskPlan& plan, std::size_t shared_bytes)
    : plan_(plan), shared_bytes_(shared_bytes), f32_(kBufCount), i32_(kBufCount), i64_(kBufCount) {
    for (int k = 0; k < kBufCount; ++k) {
        const Buf b = static_cast<Buf>(k);
        const std::size_t n = plan.elements(b);
        switch (buf_elem(b)) {
            case Elem::f32: f32_[k].assign(n, 0.0f); break;
            case Elem::i32: i32_[k].assign(n, 0); break;
            case Elem::i64: i64_[k].assign(n, 0); break;
        }
    }
}

void Emulator::upload(const PreparedInputs& p) {
    const TaskInputs& in = *p.inputs;
    f32(Buf::initial) = p.initial_parameters;
    f32(Buf::train_raw) = in.train_images;
    f32(Buf::query_raw) = in.test_images;
    auto& labels = i32(Buf::train_labels);
    for (std::size_t k = 0; k < labels.size(); ++k) labels[k] = static_cast<std::int32_t>(in.train_labels[k]);
    auto& perms = i32(Buf::permutations);
    const std::size_t n = static_cast<std::size_t>(plan_.train_count());
    for (int e = 0; e < plan_.config().epochs; ++e)
        for (std::size_t k = 0; k < n; ++k) perms[e * n + k] = static_cast<std::int32_t>(p.permutations.at(e).at(k));
}

void Emulator::execute(const Program& program) {
    plan_.check(program);
    for (const Op& op : program) {
        if (const auto* g = std::get_if<GemmOp>(&op)) {
            host_gemm(g->spec, f(g->a), f(g->b), f(g->d));
        } else if (const auto* c = std::get_if<CopyOp>(&op)) {
            if (buf_elem(c->dst.buf) == Elem::i32) std::copy_n(i(c->src), c->count, i(c->dst));
            else if (buf_elem(c->dst.buf) == Elem::f32) std::copy_n(f(c->src), c->count, f(c->dst));
            else throw Error("emulator: copy of int64 not supported");
        } else if (const auto* z = std::get_if<ZeroOp>(&op)) {
            if (buf_elem(z->dst.buf) != Elem::f32) throw Error("emulator: zero of non-float buffer");
            std::fill_n(f(z->dst), z->count, 0.0f);
        } else if (const auto* l = std::get_if<LiftOp>(&op)) {
            for (std::int64_t k = 0; k < l->train_count * model::kFeatures; ++k) elem::lift(f(l->train_raw), f(l->train_rows), k);
            for (std::int64_t k = 0; k < l->query_count * model::kFeatures; ++k) elem::lift(f(l->query_raw), f(l->query_rows), k);
        } else if (const auto* g2 = std::get_if<GatherOp>(&op)) {
            const std::int32_t* order = g2->identity ? nullptr : i(g2->order);
            const std::int32_t* src_labels = g2->with_labels ? i(g2->src_labels) : nullptr;
            std::int32_t* labels = g2->with_labels ? i(g2->labels) : nullptr;
            for (int k = 0; k < g2->rows * model::kFeatures; ++k)
                elem::gather(order, g2->first, f(g2->src_rows), src_labels, f(g2->state), f(g2->act_right), labels, k);
        } else if (const auto* c2 = std::get_if<CoupleOp>(&op)) {
            for (int k = 0; k < c2->rows * model::kHalf; ++k)
                elem::couple(f(c2->half), f(c2->branch), f(c2->act), c2->sign, c2->alpha,
                             c2->masked || c2->copy_grad ? f(c2->dhalf) : nullptr, c2->masked ? f(c2->dtmp) : nullptr,
                             c2->copy_grad ? f(c2->grad_copy) : nullptr, k);
        } else if (const auto* m = std::get_if<MaskOp>(&op)) {
            for (int k = 0; k < m->rows * model::kHalf; ++k)
                elem::mask(f(m->dhalf), f(m->dtmp), f(m->half), m->copy_grad ? f(m->grad_copy) : nullptr, k);
        } else if (const auto* lo = std::get_if<LossOp>(&op)) {
            for (int r = 0; r < lo->rows; ++r)
                elem::loss_row(f(lo->scores), f(lo->bias), i(lo->labels), lo->rows, f(lo->dscores), r);
            // Column sums in row order, as the reference's head backward forms the bias gradient. The
            // GPU kernel (kernels/loss.cuh) sums lane-strided rows and then a shuffle tree: fixed, so
            // deterministic, but not these bits; the cuBLASLt path is held to the GPU tolerance, not
            // to the reference's bits, as its products are too.
            const float* ds = f(lo->dscores);
            for (int j = 0; j < model::kClasses; ++j) {
                float acc = 0.0f;
                for (int r = 0; r < lo->rows; ++r) acc += ds[r * model::kClasses + j];
                f(lo->dbias)[j] = acc;
            }
            for (int k = 0; k < lo->rows * model::kHalf; ++k) elem::relu_left(f(lo->state), f(lo->act_left), k);
        } else if (const auto* s = std::get_if<SgdOp>(&op)) {
            for (std::size_t k = 0; k < s->count; ++k)
                elem::sgd(f(s->params), f(s->velocity), f(s->grads), s->lr, s->momentum, s->weight_decay,
                          static_cast<std::int64_t>(k));
        } else if (const auto* a = std::get_if<ArgmaxOp>(&op)) {
            std::int64_t* pred = i64(a->predictions.buf).data() + a->predictions.offset;
            for (std::int64_t r = 0; r < a->rows; ++r) elem::argmax(f(a->scores), f(a->bias), pred, r);
        } else if (const auto* fs = std::get_if<FusedStepOp>(&op)) {
            fused_step(*fs);
        } else if (const auto* fp = std::get_if<FusedPredictOp>(&op)) {
            fused_predict(*fp);
        }
    }
}

// The fused kernels' own code (engine/cuda/fused.hpp), block after block, each phase run as a loop,
// with the same shared-memory layout the kernels use. Shared memory starts as NaN for every block,
// so an item that reads what no earlier phase of its block wrote poisons the result.
// The block a loop counter stands for: in order, or (reverse) from the last, like the items.
static int nth_block(int k, int blocks, bool reverse) { return reverse ? blocks - 1 - k : k; }

void Emulator::fused_step(const FusedStepOp& op) {
    const fused::StepArgs a = fused_step_args(op, [&](Ref r) { return f(r); }, [&](Ref r) { return i(r); });
    const fused::SequentialExec ex{reverse_};
    if (op.part == FusedStepOp::Part::rows) {
        const bool weights = fused::weights_fit(fused::kRowsStateFloats, a.param_count, shared_bytes_);
        const int blocks = fused::rows_blocks(op.rows);
        for (int k = 0; k < blocks; ++k) {
            const int b = nth_block(k, blocks, reverse_);
            shared_.assign(fused::shared_bytes(fused::kRowsStateFloats, a.param_count, weights) / sizeof(float),
                           std::numeric_limits<float>::quiet_NaN());
            fused::step_rows(ex, a, b, fused::carve_rows(shared_.data(), a.param_count, weights));
        }
    } else {
        const int blocks = fused::grads_blocks(op.depth);
        for (int k = 0; k < blocks; ++k) {
            const int b = nth_block(k, blocks, reverse_);
            shared_.assign(fused::kGradsFloats, std::numeric_limits<float>::quiet_NaN());
            fused::step_grads(ex, a, b, shared_.data());
        }
    }
}

void Emulator::fused_predict(const FusedPredictOp& op) {
    const fused::PredictArgs a = fused_predict_args(op, [&](Ref r) { return f(r); }, [&](Ref r) { return l(r); });
    const bool weights = fused::weights_fit(fused::kPredictStateFloats, a.param_count, shared_bytes_);
    const fused::SequentialExec ex{reverse_};
    const int blocks = fused::ceil_div(static_cast<int>(op.rows), fused::kPredictTile);
    for (int k = 0; k < blocks; ++k) {
        const int b = nth_block(k, blocks, reverse_);
        shared_.assign(fused::shared_bytes(fused::kPredictStateFloats, a.param_count, weights) / sizeof(float),
                       std::numeric_limits<float>::quiet_NaN());
        float* w = weights ? shared_.data() : nullptr;
        fused::predict_tile(ex, a, op.rows, b, w, shared_.data() + (weights ? a.param_count : 0));
    }
}

}  // namespace revgraph::cuda
