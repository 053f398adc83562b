#include "engine/cuda/executor.hpp"

#include "engine/cuda/check.cuh"
#include "engine/cuda/fused_args.hpp"
#include "engine/cuda/kernels.hpp"
#include "engine/error.hpp"

namespace revgraph::cuda {

DeviceMemory::DeviceMemory(const TaskPlan& plan) {
    buffers_.reserve(kBufCount);
    for (int k = 0; k < kBufCount; ++k) buffers_.emplace_back(plan.bytes(static_cast<Buf>(k)));
}

void* DeviceMemory::at(Ref r, Elem e) const {
    if (buf_elem(r.buf) != e) throw Error(std::string("cuda: buffer ") + buf_name(r.buf) + " used as the wrong type");
    return static_cast<char*>(base(r.buf)) + r.offset * elem_bytes(e);
}
float* DeviceMemory::f32(Ref r) const { return static_cast<float*>(at(r, Elem::f32)); }
std::int32_t* DeviceMemory::i32(Ref r) const { return static_cast<std::int32_t*>(at(r, Elem::i32)); }
std::int64_t* DeviceMemory::i64(Ref r) const { return static_cast<std::int64_t*>(at(r, Elem::i64)); }

std::size_t DeviceMemory::total_bytes() const {
    std::size_t t = 0;
    for (const auto& b : buffers_) t += b.bytes();
    return t;
}

CompiledProgram compile(const TaskPlan& plan, const Program& program, const DeviceMemory& mem, LtMatmuls& matmuls,
                        bool programmatic) {
    plan.check(program);
    std::size_t shared_limit = 0;  // the fused kernels' shared memory, asked for once they appear
    bool fused_prepared = false;
    const auto fused_shared_limit = [&] {
        if (!fused_prepared) shared_limit = kernels::prepare_fused_kernels(), fused_prepared = true;
        return shared_limit;
    };
    CompiledProgram out;
    out.counts = count_ops(program);
    auto& L = out.launches;
    for (const Op& op : program) {
        if (const auto* g = std::get_if<GemmOp>(&op)) {
            const int id = matmuls.bind(g->spec, mem.f32(g->a), mem.f32(g->b), mem.f32(g->d));
            L.push_back([&matmuls, id](cudaStream_t s) { matmuls.launch(id, s); });
        } else if (const auto* c = std::get_if<CopyOp>(&op)) {
            const Elem e = buf_elem(c->dst.buf);
            void* dst = static_cast<char*>(mem.base(c->dst.buf)) + c->dst.offset * elem_bytes(e);
            const void* src = static_cast<const char*>(mem.base(c->src.buf)) + c->src.offset * elem_bytes(e);
            const std::size_t bytes = c->count * elem_bytes(e);
            L.push_back([=](cudaStream_t s) { cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); });
        } else if (const auto* z = std::get_if<ZeroOp>(&op)) {
            const Elem e = buf_elem(z->dst.buf);
            void* dst = static_cast<char*>(mem.base(z->dst.buf)) + z->dst.offset * elem_bytes(e);
            const std::size_t bytes = z->count * elem_bytes(e);
            L.push_back([=](cudaStream_t s) { cudaCheck(cudaMemsetAsync(dst, 0, bytes, s)); });
        } else if (const auto* l = std::get_if<LiftOp>(&op)) {
            const float* tr = mem.f32(l->train_raw);
            float* tw = mem.f32(l->train_rows);
            const float* qr = mem.f32(l->query_raw);
            float* qw = mem.f32(l->query_rows);
            const std::int64_t n = l->train_count, q = l->query_count;
            L.push_back([=](cudaStream_t s) { kernels::launch_lift(tr, tw, n, qr, qw, q, s); });
        } else if (const auto* ga = std::get_if<GatherOp>(&op)) {
            const std::int32_t* order = ga->identity ? nullptr : mem.i32(ga->order);
            const std::int32_t* src_labels = ga->with_labels ? mem.i32(ga->src_labels) : nullptr;
            std::int32_t* labels = ga->with_labels ? mem.i32(ga->labels) : nullptr;
            const float* src = mem.f32(ga->src_rows);
            float* state = mem.f32(ga->state);
            float* act = mem.f32(ga->act_right);
            const int rows = ga->rows;
            const std::int64_t first = ga->first;
            L.push_back([=](cudaStream_t s) {
                kernels::launch_gather(rows, order, first, src, src_labels, state, act, labels, s);
            });
        } else if (const auto* cp = std::get_if<CoupleOp>(&op)) {
            float* half = mem.f32(cp->half);
            const float* branch = mem.f32(cp->branch);
            float* act = mem.f32(cp->act);
            float* dhalf = cp->masked || cp->copy_grad ? mem.f32(cp->dhalf) : nullptr;
            const float* dtmp = cp->masked ? mem.f32(cp->dtmp) : nullptr;
            float* copy = cp->copy_grad ? mem.f32(cp->grad_copy) : nullptr;
            const int rows = cp->rows;
            const float sign = cp->sign, alpha = cp->alpha;
            L.push_back([=](cudaStream_t s) {
                kernels::launch_couple(rows, half, branch, act, sign, alpha, dhalf, dtmp, copy, s);
            });
        } else if (const auto* m = std::get_if<MaskOp>(&op)) {
            float* dhalf = mem.f32(m->dhalf);
            const float* dtmp = mem.f32(m->dtmp);
            const float* half = mem.f32(m->half);
            float* copy = m->copy_grad ? mem.f32(m->grad_copy) : nullptr;
            const int rows = m->rows;
            L.push_back([=](cudaStream_t s) { kernels::launch_mask(rows, dhalf, dtmp, half, copy, s); });
        } else if (const auto* lo = std::get_if<LossOp>(&op)) {
            float* scores = mem.f32(lo->scores);
            const float* bias = mem.f32(lo->bias);
            const std::int32_t* labels = mem.i32(lo->labels);
            float* dscores = mem.f32(lo->dscores);
            float* dbias = mem.f32(lo->dbias);
            const float* state = mem.f32(lo->state);
            float* act = mem.f32(lo->act_left);
            const int rows = lo->rows;
            L.push_back([=](cudaStream_t s) { kernels::launch_loss(rows, scores, bias, labels, dscores, dbias, state, act, s); });
        } else if (const auto* sg = std::get_if<SgdOp>(&op)) {
            float* p = mem.f32(sg->params);
            float* v = mem.f32(sg->velocity);
            const float* g = mem.f32(sg->grads);
            const auto count = static_cast<std::int64_t>(sg->count);
            const float lr = sg->lr, mom = sg->momentum, wd = sg->weight_decay;
            L.push_back([=](cudaStream_t s) { kernels::launch_sgd(count, p, v, g, lr, mom, wd, s); });
        } else if (const auto* am = std::get_if<ArgmaxOp>(&op)) {
            float* scores = mem.f32(am->scores);
            const float* bias = mem.f32(am->bias);
            std::int64_t* pred = mem.i64(am->predictions);
            const std::int64_t rows = am->rows;
            L.push_back([=](cudaStream_t s) { kernels::launch_argmax(rows, scores, bias, pred, s); });
        } else if (const auto* fs = std::get_if<FusedStepOp>(&op)) {
            const fused::StepArgs a = fused_step_args(
                *fs, [&](Ref r) { return mem.f32(r); }, [&](Ref r) { return mem.i32(r); });
            if (fs->part == FusedStepOp::Part::rows) {
                const bool weights = fused::weights_fit(fused::kRowsStateFloats, a.param_count, fused_shared_limit());
                out.fused_weights_shared.push_back(weights);
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_rows(a, weights, programmatic, s); });
            } else {
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_grads(a, programmatic, s); });
            }
        } else if (const auto* fp = std::get_if<FusedPredictOp>(&op)) {
            const fused::PredictArgs a = fused_predict_args(
                *fp, [&](Ref r) { return mem.f32(r); }, [&](Ref r) { return mem.i64(r); });
            const std::int64_t rows = fp->rows;
            const bool weights = fused::weights_fit(fused::kPredictStateFloats, a.param_count, fused_shared_limit());
            out.fused_weights_shared.push_back(weights);
            L.push_back([=](cudaStream_t s) { kernels::launch_fused_predict(a, rows, weights, programmatic, s); });
        } else {
            throw Error(std::string("cuda: no launcher for operation ") + op_name(op));
        }
    }
    return out;
}

}  // namespace revgraph::cuda
