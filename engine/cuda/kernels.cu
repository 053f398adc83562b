// Every kernel of the CUDA backend, one operation per .cuh (kernels first, then the launcher), in
// one translation unit so nvcc runs once for all of them.
#include "engine/cuda/kernels.hpp"

#include "engine/cuda/kernels/argmax.cuh"
#include "engine/cuda/kernels/couple.cuh"
#include "engine/cuda/kernels/fused.cuh"
#include "engine/cuda/kernels/gather.cuh"
#include "engine/cuda/kernels/lift.cuh"
#include "engine/cuda/kernels/loss.cuh"
#include "engine/cuda/kernels/mask.cuh"
#include "engine/cuda/kernels/sgd.cuh"
