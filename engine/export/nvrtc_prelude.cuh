#pragma once
// What the engine's shared headers take from the C++ standard library, for NVRTC, which has none:
// the race entry's CUDA text (engine/export/kernel_text.py) starts with this file and leaves the
// headers' own `#include <...>` lines out, so the model math is the engine's own text, unchanged.
// nvcc, which compiles the same text in the tests, brings std::floor and std::exp itself.
namespace std {
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
#if defined(__CUDACC_RTC__)
__device__ inline void* memcpy(void* to, const void* from, decltype(sizeof 0) n) { return ::memcpy(to, from, n); }
__device__ inline float floor(float x) { return floorf(x); }  // floorf is std::floor for a float
__device__ inline double exp(double x) { return ::exp(x); }
#else
__host__ __device__ inline void* memcpy(void* to, const void* from, decltype(sizeof 0) n) {
    return __builtin_memcpy(to, from, n);
}
#endif
}  // namespace std
