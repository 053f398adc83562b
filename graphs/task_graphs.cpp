// The CUDA instance of the task graphs' lifecycle, compiled once for every file that uses it.
#include "graphs/task_graphs.hpp"

namespace revgraph::graphs {

template class BasicTaskGraphs<CudaGraphApi>;

}  // namespace revgraph::graphs
