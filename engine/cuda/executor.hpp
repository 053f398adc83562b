#pragma once
// Runs the launch plan (engine/cuda/task_plan.hpp) on the GPU: one device buffer per plan buffer, and
// each program compiled once, at prepare(), into launches bound to fixed device pointers. The same
// compiled launches serve the eager step() and the graph captures, so what is validated step by
// step is exactly what the graphs replay.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/fused.hpp"
#include "engine/cuda/lt_matmul.hpp"
#include "engine/cuda/task_plan.hpp"

namespace revgraph::cuda {

class DeviceMemory {
public:
    explicit DeviceMemory(const TaskPlan& plan);

    void* base(Buf b) const { return buffers_.at(static_cast<std::size_t>(b)).get(); }
    std::size_t bytes(Buf b) const { return buffers_.at(static_cast<std::size_t>(b)).bytes(); }
    float* f32(Ref r) const;
    std::int32_t* i32(Ref r) const;
    std::int64_t* i64(Ref r) const;
    void* address(Ref r) const { return at(r, buf_elem(r.buf)); }  // any element type
    std::size_t total_bytes() const;

    // prepare()'s zeros and copies, ordered on its stream (DeviceBuffer::upload_async), and the
    // synchronous read-back.
    void upload_async(Buf b, const void* src, std::size_t bytes, cudaStream_t s) {
        buffers_.at(static_cast<std::size_t>(b)).upload_async(src, bytes, s);
    }
    void zero_async(Buf b, cudaStream_t s) { buffers_.at(static_cast<std::size_t>(b)).zero_async(s); }
    void download(Buf b, void* dst, std::size_t bytes) const {
        buffers_.at(static_cast<std::size_t>(b)).download(dst, bytes);
    }

private:
    std::vector<DeviceBuffer> buffers_;
    void* at(Ref r, Elem e) const;
};

// The second stream of a product off the chain (GemmOp::beside), and the two events that fork it
// from the program's stream and join it back. The owner keeps them alive as long as the compiled
// programs; one lane serves every program, since a program joins it before it ends. In a capture
// the fork's record and wait bring the second stream into the graph, so a captured graph has the
// two chains as two branches of its DAG.
struct SideLane {
    cudaStream_t stream = nullptr;
    cudaEvent_t fork = nullptr, join = nullptr;
};

struct CompiledProgram {
    std::vector<std::function<void(cudaStream_t)>> launches;
    OpCounts counts;
    std::vector<bool> fused_weights_shared;  // per fused rows/predict launch: parameters copied to shared memory
    SideLane side;                           // the lane its products off the chain fork to; none: no stream
    void launch(cudaStream_t stream) const {
        try {
            for (const auto& l : launches) l(stream);
        } catch (...) {
            // A throw between a fork and its join (the failed product itself, or a launch after
            // it): the second stream rejoins here, so that none of its work outlives the program
            // unjoined (the caller's cleanup waits on the program's stream) and a capture ends with
            // no stream left forked. A lane already joined records and waits on nothing pending.
            if (side.stream != nullptr) {
                (void)cudaEventRecord(side.join, side.stream);
                (void)cudaStreamWaitEvent(stream, side.join, 0);
            }
            throw;
        }
    }
};

// Checks the program against the plan's buffers, binds every product (choosing and pinning its
// algorithm on first sight of its shape) and every kernel to device pointers. programmatic: the
// fused kernels are launched with Programmatic Dependent Launch (the caller checks sm_90+).
// matmuls may be null where the plan's path has no products (path_uses_cublaslt); a product then throws.
// side: where products off the chain run (it needs matmuls' side workspace); null: every product
// runs on the program's stream in program order, which the plan's check makes the same bits.
CompiledProgram compile(const TaskPlan& plan, const Program& program, const DeviceMemory& memory, LtMatmuls* matmuls,
                        bool programmatic = false, const SideLane* side = nullptr);

}  // namespace revgraph::cuda
