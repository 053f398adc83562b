#pragma once
// SGD with momentum and weight decay (model::sgd_update) on every parameter: one thread each, the
// flat parameter, gradient and momentum buffers share model::Layout's offsets.
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct SgdOp {
    std::size_t count = 0;
    Ref params, velocity, grads;
    float lr = 0, momentum = 0, weight_decay = 0;
};

namespace ops {

inline std::vector<Access> accesses(const SgdOp& s, std::size_t) {
    return {{s.params, s.count, Elem::f32}, {s.velocity, s.count, Elem::f32}, {s.grads, s.count, Elem::f32}};
}

inline Info info(const SgdOp&) { return {"sgd", Kind::kernel}; }

struct SgdArgs {
    std::int64_t count;
    float* params;
    float* velocity;
    const float* grads;
    float lr, momentum, weight_decay;
};
template <class Memory>
SgdArgs resolve(const SgdOp& s, const Memory& m) {
    return {static_cast<std::int64_t>(s.count),
            m.f32(s.params),
            m.f32(s.velocity),
            m.f32(s.grads),
            s.lr,
            s.momentum,
            s.weight_decay};
}

RG_HD void sgd(float* params, float* velocity, const float* grads, float lr, float momentum, float weight_decay,
               std::int64_t i) {
    model::sgd_update(params[i], velocity[i], grads[i], lr, momentum, weight_decay);
}

inline void run_host(const SgdArgs& a) {
    for (std::int64_t k = 0; k < a.count; ++k) sgd(a.params, a.velocity, a.grads, a.lr, a.momentum, a.weight_decay, k);
}

void launch(const SgdArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    sgd_kernel(std::int64_t count, float* __restrict__ params, float* __restrict__ velocity,
               const float* __restrict__ grads, float lr, float momentum, float weight_decay) {
    for (std::int64_t i = kernels::first_index(); i < count; i += kernels::grid_stride())
        sgd(params, velocity, grads, lr, momentum, weight_decay, i);
}

void launch(const SgdArgs& a, Stream stream) {
    NVTX_RANGE("sgd");
    sgd_kernel<<<kernels::blocks_for(a.count), kernels::kThreads, 0, stream>>>(a.count, a.params, a.velocity, a.grads,
                                                                               a.lr, a.momentum, a.weight_decay);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
