#pragma once
// Moved to engine/cuda_util/nvtx.hpp (shared by engine/cuda, graphs/ and bench/); this path forwards
// there for the files that still include it.
#include "engine/cuda_util/nvtx.hpp"
