// PyTorch's CPU random streams, reproduced bit for bit (docs/spec.md §6, §6a).
#include "engine/rng/torch_init.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "engine/error.hpp"

namespace revgraph::rng {

// ---- mt19937 (Matsumoto & Nishimura), standard init_genrand seeding ----

Mt19937::Mt19937(std::uint32_t seed) {
    mt_[0] = seed;
    for (int i = 1; i < 624; ++i) {
        mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    }
    index_ = 624;  // the first next() regenerates the whole block
}

std::uint32_t Mt19937::next() {
    constexpr std::uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrixA = 0x9908b0dfu;
    if (index_ >= 624) {
        for (int i = 0; i < 624; ++i) {
            const std::uint32_t y = (mt_[i] & kUpper) | (mt_[(i + 1) % 624] & kLower);
            mt_[i] = mt_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
        }
        index_ = 0;
    }
    std::uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

std::uint64_t Mt19937::next64() {
    const std::uint64_t hi = next();
    const std::uint64_t lo = next();
    return (hi << 32) | lo;
}

float torch_uniform01(Mt19937& gen) {
    // 24 random bits scaled into [0, 1); exact in float.
    return static_cast<float>(gen.next() & 0xFFFFFFu) * 0x1p-24f;
}

namespace {

// ---- Cephes single-precision log and sincos as avx_mathfun.h vectorises them ----
// PyTorch's AVX2 build lets the compiler fuse multiply-adds inside these; the published bits
// depend on exactly which ones, so the fused points are spelled out with std::fma and every
// other operation is rounded on its own (the project builds with -ffp-contract=off).
// Measured on 4M values against torch: the sin tail, cos tail, log's y and the Horner steps
// each change 1 in 10^6 to 1 in 100 values when unfused; log's e*q2 and the three reduction
// steps are unaffected (their products are exact or negligible); the final fma(., std, mean)
// matters only when mean != 0.

float bits_to_float(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t float_to_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

float cephes_log(float x) {
    constexpr float kSqrtHalf = 0.707106781186547524f;
    constexpr float kP[9] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                             -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                             2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
    constexpr float kQ1 = -2.12194440e-4f;
    constexpr float kQ2 = 0.693359375f;

    const bool invalid = x <= 0.0f;
    x = std::fmax(x, std::numeric_limits<float>::min());  // denormals are cut off
    std::uint32_t u = float_to_bits(x);
    const int exponent = static_cast<int>(u >> 23) - 0x7f;
    u = (u & ~0x7f800000u) | float_to_bits(0.5f);  // mantissa scaled into [0.5, 1)
    x = bits_to_float(u);
    float e = static_cast<float>(exponent) + 1.0f;
    // Below sqrt(1/2) use 2x - 1 and one less in the exponent, keeping x - 1 small.
    const bool small = x < kSqrtHalf;
    const float tmp = small ? x : 0.0f;
    x = x - 1.0f;
    e = e - (small ? 1.0f : 0.0f);
    x = x + tmp;

    const float z = x * x;
    float y = kP[0];
    for (int i = 1; i < 9; ++i) y = std::fma(y, x, kP[i]);
    y = std::fma(y * x, z, e * kQ1);
    y = y - z * 0.5f;
    x = std::fma(e, kQ2, x + y);
    return invalid ? std::numeric_limits<float>::quiet_NaN() : x;
}

void cephes_sincos(float x, float& sin_out, float& cos_out) {
    constexpr float kFourOverPi = 1.27323954473516f;
    constexpr float kDp1 = -0.78515625f;
    constexpr float kDp2 = -2.4187564849853515625e-4f;
    constexpr float kDp3 = -3.77489497744594108e-8f;
    constexpr float kCos[3] = {2.443315711809948e-5f, -1.388731625493765e-3f, 4.166664568298827e-2f};
    constexpr float kSin[3] = {-1.9515295891e-4f, 8.3321608736e-3f, -1.6666654611e-1f};
    constexpr std::uint32_t kSign = 0x80000000u;

    std::uint32_t sign_sin = float_to_bits(x) & kSign;
    x = std::fabs(x);
    // Octant j (rounded up to even) and the Cody-Waite reduction x - j*pi/4 in three parts.
    auto j = static_cast<std::int32_t>(x * kFourOverPi);  // truncates, as cvttps does
    j = (j + 1) & ~1;
    const float y = static_cast<float>(j);
    const auto uj = static_cast<std::uint32_t>(j);
    sign_sin ^= (uj & 4u) << 29;
    const std::uint32_t sign_cos = (~(uj - 2u) & 4u) << 29;
    const bool sin_poly_is_sin = (uj & 2u) == 0;

    x = std::fma(y, kDp1, x);
    x = std::fma(y, kDp2, x);
    x = std::fma(y, kDp3, x);
    const float z = x * x;

    float c = std::fma(std::fma(kCos[0], z, kCos[1]), z, kCos[2]);
    c = std::fma(c * z, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = std::fma(std::fma(kSin[0], z, kSin[1]), z, kSin[2]);
    s = std::fma(s * z, x, x);

    // avx_mathfun picks sin/cos by masking, subtracting and adding; mirrored so signed zeros match.
    const float pick_s = sin_poly_is_sin ? s : 0.0f;
    const float pick_c = sin_poly_is_sin ? 0.0f : c;
    s = s - pick_s;
    c = c - pick_c;
    sin_out = bits_to_float(float_to_bits(pick_c + pick_s) ^ sign_sin);
    cos_out = bits_to_float(float_to_bits(c + s) ^ sign_cos);
}

// One block of 16 uniforms → 16 normals: pairs (j, j+8), cos into j, sin into j+8.
void box_muller_16(float* d, float mean, float std) {
    const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - d[j];  // [0, 1) → (0, 1] for the log
        const float u2 = d[j + 8];
        const float radius = std::sqrt(-2.0f * cephes_log(u1));
        const float theta = two_pi * u2;
        float sin_theta, cos_theta;
        cephes_sincos(theta, sin_theta, cos_theta);
        d[j] = std::fma(radius * cos_theta, std, mean);
        d[j + 8] = std::fma(radius * sin_theta, std, mean);
    }
}

// torch's 53-bit double uniform in [0, 1).
double uniform53(Mt19937& gen) { return static_cast<double>(gen.next64() & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53; }

}  // namespace

void torch_normal(Mt19937& gen, float* data, std::size_t n, double mean, double std) {
    if (!(std >= 0.0)) throw Error("normal_: std must be >= 0, got " + std::to_string(std));
    if (n >= 16) {
        const auto mean_f = static_cast<float>(mean);
        const auto std_f = static_cast<float>(std);
        for (std::size_t i = 0; i < n; ++i) data[i] = torch_uniform01(gen);
        for (std::size_t i = 0; i + 16 <= n; i += 16) box_muller_16(data + i, mean_f, std_f);
        if (n % 16 != 0) {
            // The tail block overlaps the last full one and is redrawn from fresh uniforms.
            float* tail = data + n - 16;
            for (int i = 0; i < 16; ++i) tail[i] = torch_uniform01(gen);
            box_muller_16(tail, mean_f, std_f);
        }
        return;
    }
    // Scalar path: double Box-Muller, one pair per two values, the sine kept for the next call.
    for (std::size_t i = 0; i < n; ++i) {
        double z;
        if (gen.has_next_normal_) {
            z = gen.next_normal_;
            gen.has_next_normal_ = false;
        } else {
            const double u1 = uniform53(gen);
            const double u2 = uniform53(gen);
            const double radius = std::sqrt(-2.0 * std::log(1.0 - u2));
            const double theta = 2.0 * std::numbers::pi * u1;
            gen.next_normal_ = radius * std::sin(theta);
            gen.has_next_normal_ = true;
            z = radius * std::cos(theta);
        }
        data[i] = static_cast<float>(std::fma(z, std, mean));  // torch's build fuses z*std + mean
    }
}

void torch_uniform(Mt19937& gen, float* data, std::size_t n, double from, double to) {
    if (!(from <= to))
        throw Error("uniform_: need from <= to, got [" + std::to_string(from) + ", " + std::to_string(to) + ")");
    const auto from_f = static_cast<float>(from);
    const float range = static_cast<float>(to) - from_f;
    if (!std::isfinite(range)) throw Error("uniform_: range too large for float32");
    for (std::size_t i = 0; i < n; ++i) {
        // u*range + from rounded once (torch's AVX2 build fuses it); u*range is exact in float's
        // 24x24 bits, so this equals the double formula of docs/spec.md §6a wherever that rounds only once.
        data[i] = std::fma(torch_uniform01(gen), range, from_f);
    }
}

void init_parameters(const model::Layout& layout, std::uint64_t seed, float* params) {
    Mt19937 gen(static_cast<std::uint32_t>(seed));  // manual_seed keeps the low 32 bits
    const double branch_std = 0.05 / std::sqrt(static_cast<double>(layout.half()));
    for (int i = 0; i < layout.branch_count(); ++i) {
        torch_normal(gen, params + layout.branch_offset(i), layout.branch_size(), 0.0, branch_std);
    }
    // nn.Linear(width, 10).reset_parameters(): kaiming_uniform_(a=sqrt(5)) on the weight, the bound
    // computed in doubles in torch.nn.init's order, then the bias in ±1/sqrt(fan_in).
    const double fan_in = layout.width();
    const double slope = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + slope * slope));
    const double weight_bound = std::sqrt(3.0) * (gain / std::sqrt(fan_in));
    torch_uniform(gen, params + layout.head_weight_offset(), layout.head_weight_size(), -weight_bound, weight_bound);
    const double bias_bound = 1.0 / std::sqrt(fan_in);
    torch_uniform(gen, params + layout.head_bias_offset(), model::kClasses, -bias_bound, bias_bound);
}

}  // namespace revgraph::rng
