#pragma once
// The launchers of the backend's own kernels (engine/cuda/kernels/*.cuh, compiled in kernels.cu),
// declared for host code. Each enqueues one kernel on `stream` and throws revgraph::Error when the
// launch is refused; none synchronises, so all of them may be captured into a graph.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/fused.hpp"

namespace revgraph::cuda::kernels {

void launch_lift(const float* train_raw, float* train_rows, std::int64_t train_count, const float* query_raw,
                 float* query_rows, std::int64_t query_count, cudaStream_t stream);
void launch_gather(int rows, const std::int32_t* order, std::int64_t first, const float* src_rows,
                   const std::int32_t* src_labels, float* state, float* act_right, std::int32_t* labels,
                   cudaStream_t stream);
void launch_couple(int rows, float* half, const float* branch, float* act, float sign, float alpha, float* dhalf,
                   const float* dtmp, float* grad_copy, cudaStream_t stream);
void launch_mask(int rows, float* dhalf, const float* dtmp, const float* half, float* grad_copy, cudaStream_t stream);
void launch_loss(int rows, float* scores, const float* bias, const std::int32_t* labels, float* dscores, float* dbias,
                 const float* state, float* act_left, cudaStream_t stream);
void launch_sgd(std::int64_t count, float* params, float* velocity, const float* grads, float lr, float momentum,
                float weight_decay, cudaStream_t stream);
void launch_argmax(std::int64_t rows, float* scores, const float* bias, std::int64_t* predictions,
                   cudaStream_t stream);

// The fused path (engine/cuda/kernels/fused.cuh). prepare_fused_kernels() opts the kernels in to the
// device's largest per-block shared memory and returns it; call it before launching or capturing
// them. weights_shared: the blocks copy the parameters to shared memory (fused::weights_fit).
// programmatic: launch with Programmatic Dependent Launch (sm_90+; RuntimeOptions::programmatic_launch).
std::size_t prepare_fused_kernels();
// Whether the loaded fused kernels were compiled for sm_90+, so that they wait for a programmatic
// predecessor: the condition for launching them programmatically.
bool fused_kernels_wait_programmatically();
void launch_fused_rows(const fused::StepArgs& args, bool weights_shared, bool programmatic, cudaStream_t stream);
void launch_fused_grads(const fused::StepArgs& args, bool programmatic, cudaStream_t stream);
void launch_fused_predict(const fused::PredictArgs& args, std::int64_t rows, bool weights_shared, bool programmatic,
                          cudaStream_t stream);

}  // namespace revgraph::cuda::kernels
