#pragma once
// The per-row math of docs/spec.md §2-§5, written once for every backend: host code calls it directly,
// CUDA kernels call the same functions (RG_HD marks them __host__ __device__ under nvcc).
// Dot products run in index order and nothing here fuses multiply-adds on the host
// (the build uses -ffp-contract=off), so the CPU reference is reproducible anywhere.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/model/layout.hpp"

#if defined(__CUDACC__)
#define RG_HD __host__ __device__ __forceinline__
#else
#define RG_HD inline
#endif

// Device code unrolls the fixed-length sums whole (41, 82 and 10 terms once inlined), so that ptxas
// can issue every shared-memory load of a sum ahead of its chain of adds; the adds stay in index
// order, so the bits do not change. Alone it did not make the fused kernels faster: the loads first
// had to be written out (engine/cuda/ordered_sum.hpp; bench/NOTES.md, "Levers tried, and what each
// gave").
// RG_DEVICE_UNROLL_BY(n): the same for a sum of run-time length (the grads kernel's rows).
#if defined(__CUDA_ARCH__)
#define RG_DEVICE_UNROLL _Pragma("unroll")
#define RG_PRAGMA(x) _Pragma(#x)
#define RG_DEVICE_UNROLL_BY(n) RG_PRAGMA(unroll n)
#else
#define RG_DEVICE_UNROLL
#define RG_DEVICE_UNROLL_BY(n)
#endif

namespace revgraph::model {

template <typename T>
RG_HD T relu(T x) {
    return x > T(0) ? x : T(0);
}

// relu'(x) with relu'(0) = 0, as PyTorch has it.
template <typename T>
RG_HD T relu_mask(T x) {
    return x > T(0) ? T(1) : T(0);
}

// docs/spec.md §2 for one pixel: v = 4x - 0.5 (multiply, then subtract) in the engine's precision T — for
// float32 exactly the published rounding. x*4 is exact, so a compiler that fuses the two into one
// fma (nvcc does in device code) gives the same bits.
template <typename T>
RG_HD T lift_pixel(float x) {
    const T scaled = static_cast<T>(x) * T(4);
    return scaled - T(0.5);
}

// docs/spec.md §2: every pixel lifted, then width - 81 appended zeros.
template <typename T>
RG_HD void lift_row(const float* pixels, T* row, int width = kFeatures) {
    for (int i = 0; i < kPixels; ++i) row[i] = lift_pixel<T>(pixels[i]);
    for (int i = kPixels; i < width; ++i) row[i] = T(0);
}

// y[o] = sum_i relu(in[i]) * W[o][i] for W half x half row-major ([out, in]); index order.
template <typename T>
RG_HD T branch_dot(const T* w_row, const T* in, int half = kHalf) {
    T acc = T(0);
    RG_DEVICE_UNROLL
    for (int i = 0; i < half; ++i) acc += relu(in[i]) * w_row[i];
    return acc;
}

// Cephes expf's constants, in one place for exp_f32 below and the fast CPU kernels' vector versions
// (engine/cpu/fast_*.cpp): x = n·ln2 + r with ln2 split in two (kLn2Hi exact in few bits, so n·kLn2Hi
// is exact; r = x - n·kLn2Hi - n·kLn2Lo), and e^r ≈ 1 + r + r²·(kP0 + kP1 r + ... + kP5 r⁵).
namespace cephes_expf {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kP0 = 5.0000001201e-1f, kP1 = 1.6666665459e-1f, kP2 = 4.1665795894e-2f, kP3 = 8.3334519073e-3f,
                       kP4 = 1.3981999507e-3f, kP5 = 1.9875691500e-4f;
}  // namespace cephes_expf

// e^x in float32 from nothing but IEEE multiplies, adds and exact bit operations, so that host code
// (-ffp-contract=off) and device code (--fmad=false) get the same bits — the C library's expf and
// CUDA's differ in the last place, and that alone would keep a GPU backend that sums in the
// reference's order from reproducing it exactly. Cephes' expf: x = n·ln2 + r with |r| <= ln2/2
// (ln2 split in two so n·C1 is exact), e^r by a degree-5 polynomial, 2^n from the exponent bits;
// within 2 ulp of e^x. Below -87.33654 (e^x under the smallest normal float) it returns 0, above
// 88.72283 +inf, and NaN for NaN.
RG_HD float float_from_bits(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

RG_HD float exp_f32(float x) {
    using namespace cephes_expf;
    if (x != x) return x;
    if (x > 88.72283f) return float_from_bits(0x7f800000u);  // +inf
    if (x < -87.33654f) return 0.0f;
    const float n = std::floor(x * kLog2e + 0.5f);
    float r = x - n * kLn2Hi;
    r = r - n * kLn2Lo;
    const float z = r * r;
    float y = kP5;
    y = y * r + kP4;
    y = y * r + kP3;
    y = y * r + kP2;
    y = y * r + kP1;
    y = y * r + kP0;
    y = y * z + r + 1.0f;
    // 2^n in two exact halves (n is -126 .. 128 here), each a power of two built from its bits.
    const int ni = static_cast<int>(n);
    const int half = ni / 2;
    return y * float_from_bits(static_cast<std::uint32_t>(half + 127) << 23) *
           float_from_bits(static_cast<std::uint32_t>(ni - half + 127) << 23);
}

// The exponential of the model's softmax: exp_f32 in float32 (the same bits on CPU and GPU), the C
// library's in float64 (the double-precision reference, checked against PyTorch to 1e-13).
template <typename T>
RG_HD T softmax_exp(T x) {
    if constexpr (sizeof(T) == sizeof(float))
        return exp_f32(x);
    else
        return std::exp(x);
}

// Mean-cross-entropy gradient of one row of scores: (softmax(s) - onehot(label)) / rows.
// Returns the row's loss (logsumexp - s[label]).
// Its pieces are also used one by one, by the fused GPU kernels, which spread a row over threads
// (one class each): the row's largest score, a class's exponential, the row's sum of them (in class
// order), and a class's gradient from its exponential and that sum.
template <typename T>
RG_HD T row_max(const T* scores) {
    T m = scores[0];
    for (int j = 1; j < kClasses; ++j) m = scores[j] > m ? scores[j] : m;
    return m;
}
template <typename T>
RG_HD T row_sum(const T* e) {
    T sum = T(0);
    for (int j = 0; j < kClasses; ++j) sum += e[j];
    return sum;
}
template <typename T>
RG_HD T inverse_rows(int rows) {
    return T(1) / static_cast<T>(rows);
}
template <typename T>
RG_HD T xent_grad(T e, T sum, bool is_label, T inv_rows) {
    const T p = e / sum;
    return (p - (is_label ? T(1) : T(0))) * inv_rows;
}

template <typename T>
RG_HD T softmax_xent_grad_row(const T* scores, std::int64_t label, int rows, T* dscores) {
    const T m = row_max(scores);
    T e[kClasses];
    for (int j = 0; j < kClasses; ++j) e[j] = softmax_exp(scores[j] - m);
    const T sum = row_sum(e);
    const T inv_rows = inverse_rows<T>(rows);
    for (int j = 0; j < kClasses; ++j) dscores[j] = xent_grad(e[j], sum, j == label, inv_rows);
    return std::log(sum) + m - scores[label];
}

// Prediction: argmax with the lowest index on ties.
template <typename T>
RG_HD std::int64_t argmax_row(const T* scores) {
    int best = 0;
    for (int j = 1; j < kClasses; ++j)
        if (scores[j] > scores[best]) best = j;
    return best;
}

// torch.optim.SGD, dampening 0, no Nesterov: d = g + wd*p; v = m*v + d; p = p - lr*v.
template <typename T>
RG_HD void sgd_update(T& p, T& v, T g, T lr, T momentum, T weight_decay) {
    const T d = weight_decay != T(0) ? g + weight_decay * p : g;
    v = momentum * v + d;
    p = p - lr * v;
}

}  // namespace revgraph::model
