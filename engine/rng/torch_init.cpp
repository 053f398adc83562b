// PyTorch's CPU random streams, reproduced bit for bit (docs/spec.md §6, §6a).
#include "engine/rng/torch_init.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "engine/error.hpp"
#include "engine/rng/torch_normal.hpp"

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

// torch's 53-bit double uniform in [0, 1).
double uniform53(Mt19937& gen) { return static_cast<double>(gen.next64() & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53; }

}  // namespace

void torch_normal(Mt19937& gen, float* data, std::size_t n, double mean, double std) {
    if (!(std >= 0.0)) throw Error("normal_: std must be >= 0, got " + std::to_string(std));
    if (n >= 16) {
        const auto mean_f = static_cast<float>(mean);
        const auto std_f = static_cast<float>(std);
        for (std::size_t i = 0; i < n; ++i) data[i] = torch_uniform01(gen);
        for (std::size_t i = 0; i + 16 <= n; i += 16) torch_math::box_muller_16(data + i, mean_f, std_f);
        if (n % 16 != 0) {
            // The tail block overlaps the last full one and is redrawn from fresh uniforms.
            float* tail = data + n - 16;
            for (int i = 0; i < 16; ++i) tail[i] = torch_uniform01(gen);
            torch_math::box_muller_16(tail, mean_f, std_f);
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
        data[i] = torch_math::uniform_value(torch_uniform01(gen), range, from_f);
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
