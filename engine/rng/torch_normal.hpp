#pragma once
// The arithmetic of PyTorch's vectorised (AVX2) normal_ and of its float32 uniform_, per value:
// engine/rng/torch_init.cpp draws the published learner's initial parameters with it. Written for
// host and device code alike (RG_HD, no standard library under NVRTC), so that a GPU that draws them
// one day shares these very lines; the race entry today redoes them in numpy, within its 20 KB, and
// test/export/ holds its parameters to the engine's hashes. docs/spec.md §6a.
//
// Cephes' single-precision log and sincos as avx_mathfun.h vectorises them. PyTorch's AVX2 build
// lets the compiler fuse multiply-adds inside them; the published bits depend on exactly which
// ones, so the fused points are written as fma and every other operation rounds on its own (the
// project builds with -ffp-contract=off and --fmad=false). Measured on 4M values against torch:
// the sin tail, cos tail, log's y and the Horner steps each change 1 in 10^6 to 1 in 100 values
// when unfused; log's e*q2 and the three reduction steps are unaffected (their products are exact
// or negligible); the final fma(., std, mean) matters only when mean != 0.
#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

#include "engine/model/math.hpp"

namespace revgraph::rng::torch_math {

RG_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return fmaf(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

RG_HD std::uint32_t bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

RG_HD float cephes_log(float x) {
    const float p[9] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,  -1.2420140846e-1f, 1.4249322787e-1f,
                        -1.6668057665e-1f, 2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
    const bool invalid = x <= 0.0f;
    x = x > 1.17549435e-38f ? x : 1.17549435e-38f;  // fmax with the smallest normal: denormals are cut off
    std::uint32_t u = bits(x);
    const int exponent = static_cast<int>(u >> 23) - 0x7f;
    x = model::float_from_bits((u & ~0x7f800000u) | 0x3f000000u);  // the mantissa scaled into [0.5, 1)
    float e = static_cast<float>(exponent) + 1.0f;
    // Below sqrt(1/2) use 2x - 1 and one less in the exponent, keeping x - 1 small.
    const bool small = x < 0.707106781186547524f;
    const float tmp = small ? x : 0.0f;
    x = x - 1.0f;
    e = e - (small ? 1.0f : 0.0f);
    x = x + tmp;
    const float z = x * x;
    float y = p[0];
    for (int i = 1; i < 9; ++i) y = fma(y, x, p[i]);
    y = fma(y * x, z, e * -2.12194440e-4f);
    y = y - z * 0.5f;
    x = fma(e, 0.693359375f, x + y);
    return invalid ? model::float_from_bits(0x7fc00000u) : x;
}

RG_HD void cephes_sincos(float x, float& sin_out, float& cos_out) {
    std::uint32_t sign_sin = bits(x) & 0x80000000u;
    x = model::float_from_bits(bits(x) & 0x7fffffffu);
    // Octant j (rounded up to even) and the Cody-Waite reduction x - j*pi/4 in three parts.
    int j = static_cast<int>(x * 1.27323954473516f);  // truncates, as cvttps does
    j = (j + 1) & ~1;
    const float y = static_cast<float>(j);
    const auto uj = static_cast<std::uint32_t>(j);
    sign_sin ^= (uj & 4u) << 29;
    const std::uint32_t sign_cos = (~(uj - 2u) & 4u) << 29;
    const bool sin_poly_is_sin = (uj & 2u) == 0;
    x = fma(y, -0.78515625f, x);
    x = fma(y, -2.4187564849853515625e-4f, x);
    x = fma(y, -3.77489497744594108e-8f, x);
    const float z = x * x;
    float c = fma(fma(2.443315711809948e-5f, z, -1.388731625493765e-3f), z, 4.166664568298827e-2f);
    c = fma(c * z, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = fma(fma(-1.9515295891e-4f, z, 8.3321608736e-3f), z, -1.6666654611e-1f);
    s = fma(s * z, x, x);
    // avx_mathfun picks sin/cos by masking, subtracting and adding; mirrored so signed zeros match.
    const float pick_s = sin_poly_is_sin ? s : 0.0f;
    const float pick_c = sin_poly_is_sin ? 0.0f : c;
    s = s - pick_s;
    c = c - pick_c;
    sin_out = model::float_from_bits(bits(pick_c + pick_s) ^ sign_sin);
    cos_out = model::float_from_bits(bits(c + s) ^ sign_cos);
}

// One block of 16 uniforms -> 16 normals in place: pairs (j, j+8), the cosine into j, the sine into j+8.
RG_HD void box_muller_16(float* d, float mean, float stdev) {
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - d[j];  // [0, 1) -> (0, 1] for the log
        const float u2 = d[j + 8];
#if defined(__CUDA_ARCH__)
        const float radius = sqrtf(-2.0f * cephes_log(u1));
#else
        const float radius = std::sqrt(-2.0f * cephes_log(u1));
#endif
        const float theta = static_cast<float>(2.0 * 3.14159265358979323846) * u2;  // 2π rounded to float
        float sin_theta, cos_theta;
        cephes_sincos(theta, sin_theta, cos_theta);
        d[j] = fma(radius * cos_theta, stdev, mean);
        d[j + 8] = fma(radius * sin_theta, stdev, mean);
    }
}

// uniform_(from, to) on one value from its uniform u in [0, 1): u·range + from rounded once
// (torch's AVX2 build fuses it; u·range is exact in float's 24x24 bits), range = to - from in float.
RG_HD float uniform_value(float u, float range, float from) { return fma(u, range, from); }

}  // namespace revgraph::rng::torch_math
