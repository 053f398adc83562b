#pragma once
// Moved to engine/cuda_util/check.hpp (shared by engine/cuda and graphs/); this path forwards there
// for the files that still include it.
#include "engine/cuda_util/check.hpp"
