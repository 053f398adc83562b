// Every kernel of the CUDA backend in one translation unit, so nvcc runs once for all of them: the
// operations' kernels and launchers, each in its own file under engine/cuda/ops/ (defined here only,
// where REVGRAPH_DEFINE_KERNELS is set), and the fused path's (kernels/fused.cuh at width 82,
// kernels/fused_cluster.cuh its epochs on a thread-block cluster, kernels/fused_any.cuh the other
// widths).
#define REVGRAPH_DEFINE_KERNELS 1

#include "engine/cuda/kernels.hpp"

#include "engine/cuda/kernels/fused.cuh"
#include "engine/cuda/kernels/fused_cluster.cuh"
#include "engine/cuda/kernels/fused_any.cuh"
#include "engine/cuda/ops/argmax.hpp"
#include "engine/cuda/ops/copy.hpp"
#include "engine/cuda/ops/couple.hpp"
#include "engine/cuda/ops/gather.hpp"
#include "engine/cuda/ops/gemm.hpp"
#include "engine/cuda/ops/lift.hpp"
#include "engine/cuda/ops/loss.hpp"
#include "engine/cuda/ops/mask.hpp"
#include "engine/cuda/ops/sgd.hpp"
#include "engine/cuda/ops/sgd_gather.hpp"
#include "engine/cuda/ops/zero.hpp"
