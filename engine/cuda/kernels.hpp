#pragma once
// The launchers of the fused path's kernels (engine/cuda/kernels/fused.cuh, compiled in kernels.cu),
// declared for host code; every other operation declares its own in engine/cuda/ops/. Each enqueues
// one kernel on `stream` and throws revgraph::Error when the launch is refused; none synchronises,
// so all of them may be captured into a graph.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/cuda/fused.hpp"
#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/fused_any/step.hpp"

namespace revgraph::cuda::kernels {

// The fused path (engine/cuda/kernels/fused.cuh). prepare_fused_kernels(L) opts the kernels of sum
// order L (fused::kSumLanes, the engine's, unless a lab runs another) in to the device's largest
// per-block shared memory and returns it; call it before launching or capturing them. Only that
// order's kernels are touched, so a process loads no other order's code. weights_shared: the
// blocks copy the parameters to shared memory (fused::weights_fit). programmatic: launch with
// Programmatic Dependent Launch (sm_90+; RuntimeOptions::programmatic_launch).
std::size_t prepare_fused_kernels(int sum_lanes = fused::kSumLanes);
// Whether the loaded fused kernels were compiled for sm_90+, so that they wait for a programmatic
// predecessor: the condition for launching them programmatically.
bool fused_kernels_wait_programmatically();
// threads: threads per block, 0 for the kernel's own constant (fused::kRowsThreads, kGradsThreads,
// kPredictThreads, which are also the kernels' launch bounds); other values are for the kernel lab
// (bench/labs/kernel_lab.cpp), since the items of each phase are shared out among whatever threads run.
void launch_fused_rows(const fused::StepArgs& args, bool weights_shared, bool programmatic, cudaStream_t stream,
                       unsigned int threads = 0);
void launch_fused_grads(const fused::StepArgs& args, bool programmatic, cudaStream_t stream, unsigned int threads = 0);
void launch_fused_predict(const fused::PredictArgs& args, std::int64_t rows, bool weights_shared, bool programmatic,
                          cudaStream_t stream, unsigned int threads = 0);

// Whole epochs of the fused step in one launch of thread-block clusters (engine/cuda/fused_cluster.hpp,
// kernels/fused_cluster.cuh; sm_90+): prepare_fused_cluster_kernel(L) throws, in one line, where the
// device or this build's code has no clusters; else it opts the kernel of sum order L in to the
// device's largest per-block shared memory and to clusters past 8 blocks, and returns that limit.
// fused_cluster_problem says in one line why a cluster of `cluster_blocks` blocks of `smem` bytes
// cannot run here ("" when it can: call it after prepare). launch_fused_cluster runs `tasks`
// clusters, cluster c on device_tasks[c] (args itself when tasks is 1 and device_tasks null); args
// sizes the launch, so every device_tasks[c] must have its groups, rows_per_block, weights_shared
// and sum_lanes (fused::same_launch_shape).
// fused_cluster_code_problem: the device's and this build's half of that ("" where both have clusters).
std::string fused_cluster_code_problem(int sum_lanes = fused::kSumLanes);
std::size_t prepare_fused_cluster_kernel(int sum_lanes = fused::kSumLanes);
std::string fused_cluster_problem(int cluster_blocks, int sum_lanes, std::size_t smem);
// `a` ready to launch in clusters of `cluster_blocks` here: the kernel prepared, the parameters
// staged where a group's share of the limit holds them; throws the one-line problem where it cannot
// run (the executor's epoch launch and a group of tasks' launch, cluster_tasks.hpp, alike).
fused::EpochsArgs fit_fused_cluster(fused::EpochsArgs a, int cluster_blocks);
void launch_fused_cluster(const fused::EpochsArgs& args, int cluster_blocks, int tasks,
                          const fused::EpochsArgs* device_tasks, cudaStream_t stream);

// The fused path at every width but 82 (engine/cuda/kernels/fused_any.cuh). prepare_fused_any_kernels()
// opts them in to the device's largest per-block shared memory and returns it; args.staged and
// args.rows_per_block are the caller's (engine/cuda/fused_any_shape.hpp), smem_limit what prepare
// returned: a block that would need more is refused in one line.
std::size_t prepare_fused_any_kernels();
bool fused_any_kernels_wait_programmatically();
void launch_fused_any_rows(const fused_any::Args& args, std::size_t smem_limit, bool programmatic, cudaStream_t stream);
void launch_fused_any_grads(const fused_any::Args& args, bool programmatic, cudaStream_t stream);
void launch_fused_any_predict(const fused_any::Args& args, std::size_t smem_limit, bool programmatic,
                              cudaStream_t stream);

}  // namespace revgraph::cuda::kernels
