#pragma once
// A task's CUDA graphs: graphs/basic_task_graphs.hpp's lifecycle on the CUDA runtime
// (graphs/cuda_api.hpp), instantiated once in graphs/task_graphs.cpp.
#include <cuda_runtime.h>

#include "graphs/basic_task_graphs.hpp"
#include "graphs/cuda_api.hpp"

namespace revgraph::graphs {

using LaunchPlan = BasicLaunchPlan<cudaStream_t>;
using TaskGraphs = BasicTaskGraphs<CudaGraphApi>;
extern template class BasicTaskGraphs<CudaGraphApi>;

}  // namespace revgraph::graphs
