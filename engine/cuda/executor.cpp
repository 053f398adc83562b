#include "engine/cuda/executor.hpp"

#include <string>
#include <type_traits>

#include "engine/cuda_util/check.hpp"
#include "engine/cuda/fused_any_shape.hpp"
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

namespace {
// An operation whose file defines its GPU launch: every one but the cuBLASLt product (bound by
// LtMatmuls) and the fused kernels (which ask for shared memory and may launch programmatically).
template <class T>
concept Launched = requires(const T& op, const DeviceMemory& m, cudaStream_t s) {
    ops::launch(ops::resolve(op, m), s);
};
}  // namespace

CompiledProgram compile(const TaskPlan& plan, const Program& program, const DeviceMemory& mem, LtMatmuls* matmuls,
                        bool programmatic, const SideLane* side) {
    plan.check(program);
    std::size_t shared_limit = 0;  // the fused kernels' shared memory, asked for once they appear
    bool fused_prepared = false;
    const auto fused_shared_limit = [&] {
        if (!fused_prepared) shared_limit = kernels::prepare_fused_kernels(), fused_prepared = true;
        return shared_limit;
    };
    std::size_t any_limit = 0;  // the same for the any-width kernels (widths other than 82)
    bool any_prepared = false;
    const auto any_shared_limit = [&] {
        if (!any_prepared) any_limit = kernels::prepare_fused_any_kernels(), any_prepared = true;
        return any_limit;
    };
    CompiledProgram out;
    out.counts = count_ops(program);
    auto& L = out.launches;
    // Products off the chain go to the second stream where there is one (lane_schedule says where
    // it forks and rejoins); else every operation runs on the program's stream, in program order.
    const bool lanes = side != nullptr && matmuls != nullptr && matmuls->has_side_workspace();
    if (lanes) out.side = *side;
    bool beside = false;  // the operation being bound forks to the second stream
    // No default case: an operation without a handler here fails to compile.
    const auto bind = [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
            if (matmuls == nullptr) throw Error("cuda: a matrix product on a path without cuBLASLt");
            const int id = matmuls->bind(op.spec, mem.f32(op.a), mem.f32(op.b), mem.f32(op.d));
            if (beside) {
                const SideLane lane = *side;
                L.push_back([matmuls, id, lane](cudaStream_t s) {
                    cudaCheck(cudaEventRecord(lane.fork, s));
                    cudaCheck(cudaStreamWaitEvent(lane.stream, lane.fork, 0));
                    matmuls->launch(id, lane.stream, true);  // a throw: CompiledProgram::launch rejoins
                    cudaCheck(cudaEventRecord(lane.join, lane.stream));
                });
            } else {
                L.push_back([matmuls, id](cudaStream_t s) { matmuls->launch(id, s); });
            }
        } else if constexpr (std::is_same_v<T, FusedStepOp>) {
            const fused::StepArgs a = ops::resolve(op, mem);
            if (op.part == FusedStepOp::Part::rows) {
                const bool weights =
                    fused::weights_fit(fused::rows_state_floats(a.rows_per_block), a.param_count, fused_shared_limit());
                out.fused_weights_shared.push_back(weights);
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_rows(a, weights, programmatic, s); });
            } else {
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_grads(a, programmatic, s); });
            }
        } else if constexpr (std::is_same_v<T, FusedPredictOp>) {
            const fused::PredictArgs a = ops::resolve(op, mem);
            const std::int64_t rows = op.rows;
            const bool weights =
                fused::weights_fit(fused::predict_state_floats(a.tile), a.param_count, fused_shared_limit());
            out.fused_weights_shared.push_back(weights);
            L.push_back([=](cudaStream_t s) { kernels::launch_fused_predict(a, rows, weights, programmatic, s); });
        } else if constexpr (std::is_same_v<T, FusedAnyStepOp>) {
            fused_any::Args a = ops::resolve(op, mem);
            a.rows_per_block = fused_any::kRowsPerBlock;
            if (op.part == FusedAnyStepOp::Part::rows) {
                const std::size_t limit = any_shared_limit();
                a.staged = fused_any::stages_parameters(fused_any::rows_scratch_floats(a.half, a.rows_per_block),
                                                        static_cast<std::size_t>(a.params), limit)
                               ? 1
                               : 0;
                out.fused_weights_shared.push_back(a.staged != 0);
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_any_rows(a, limit, programmatic, s); });
            } else {
                L.push_back([=](cudaStream_t s) { kernels::launch_fused_any_grads(a, programmatic, s); });
            }
        } else if constexpr (std::is_same_v<T, FusedEpochsOp>) {
            const fused::EpochsArgs a = kernels::fit_fused_cluster(ops::resolve(op, mem), op.cluster_blocks);
            out.fused_weights_shared.push_back(a.weights_shared);
            const int blocks = op.cluster_blocks;
            L.push_back([=](cudaStream_t s) { kernels::launch_fused_cluster(a, blocks, 1, nullptr, s); });
        } else if constexpr (std::is_same_v<T, FusedAnyPredictOp>) {
            fused_any::Args a = ops::resolve(op, mem);
            const std::size_t limit = any_shared_limit();
            a.rows_per_block = fused_any::predict_rows(a.half, limit);
            a.staged = fused_any::stages_parameters(fused_any::predict_scratch_floats(a.half, a.rows_per_block),
                                                    static_cast<std::size_t>(a.params), limit)
                           ? 1
                           : 0;
            out.fused_weights_shared.push_back(a.staged != 0);
            L.push_back([=](cudaStream_t s) { kernels::launch_fused_any_predict(a, limit, programmatic, s); });
        } else {
            static_assert(Launched<T>, "an operation of the plan has no launcher (see docs/adding-an-op.md)");
            const auto args = ops::resolve(op, mem);
            L.push_back([args](cudaStream_t s) { ops::launch(args, s); });
        }
    };
    for (const LaneStep& step : lane_schedule(program)) {
        if (step.kind == LaneStep::Kind::join) {
            if (!lanes) continue;
            const cudaEvent_t join = side->join;
            L.push_back([join](cudaStream_t s) { cudaCheck(cudaStreamWaitEvent(s, join, 0)); });
            continue;
        }
        beside = lanes && step.kind == LaneStep::Kind::beside;
        std::visit(bind, program[step.op]);
    }
    return out;
}

}  // namespace revgraph::cuda
