// numpy's SeedSequence → PCG64 → Generator.permutation, following docs/spec.md §6a.
#include "engine/rng/pcg64.hpp"

#include <string>
#include <utility>

#include "engine/error.hpp"

namespace revgraph::rng {
namespace {

__extension__ typedef unsigned __int128 u128;  // __extension__: quiet under -Wpedantic

// SeedSequence constants (numpy/random/bit_generator.pyx).
constexpr std::uint32_t kInitA = 0x43b0d7e5;
constexpr std::uint32_t kMultA = 0x931e8875;
constexpr std::uint32_t kInitB = 0x8b51f9dd;
constexpr std::uint32_t kMultB = 0x58f38ded;
constexpr std::uint32_t kMixMultL = 0xca01f9dd;
constexpr std::uint32_t kMixMultR = 0x4973f715;
constexpr int kPoolSize = 4;

// The multiplier of PCG64's 128-bit LCG.
constexpr u128 kPcgMultiplier = (u128{2549297995355413924ULL} << 64) | 4865540595714422341ULL;

// hashmix carries its multiplier state across calls, so it lives in a small object.
struct HashMix {
    std::uint32_t h = kInitA;
    std::uint32_t operator()(std::uint32_t v) {
        v ^= h;
        h *= kMultA;
        v *= h;
        v ^= v >> 16;
        return v;
    }
};

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
    std::uint32_t r = kMixMultL * x - kMixMultR * y;
    return r ^ (r >> 16);
}

}  // namespace

std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) {
    // The entropy is the seed's little-endian 32-bit words, as few as it takes (0 → one word).
    std::uint32_t words[2] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
    const int word_count = (seed >> 32) != 0 ? 2 : 1;

    HashMix hashmix;
    std::uint32_t pool[kPoolSize];
    for (int i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < word_count ? words[i] : 0);
    for (int src = 0; src < kPoolSize; ++src) {
        for (int dst = 0; dst < kPoolSize; ++dst) {
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
        }
    }
    // A uint64 seed has at most two words, so none is left over beyond the pool of four.

    std::uint32_t h = kInitB;
    std::uint32_t out32[8];
    for (int i = 0; i < 8; ++i) {
        std::uint32_t v = pool[i % kPoolSize] ^ h;
        h *= kMultB;
        v *= h;
        v ^= v >> 16;
        out32[i] = v;
    }
    std::array<std::uint64_t, 4> state{};
    for (int k = 0; k < 4; ++k) state[k] = std::uint64_t{out32[2 * k]} | std::uint64_t{out32[2 * k + 1]} << 32;
    return state;
}

Pcg64::Pcg64(std::uint64_t seed) {
    const auto s = seed_sequence_state(seed);
    const u128 initstate = (u128{s[0]} << 64) | s[1];
    const u128 initseq = (u128{s[2]} << 64) | s[3];
    inc_ = (initseq << 1) | 1;
    state_ = 0;
    step();
    state_ += initstate;
    step();
}

void Pcg64::step() { state_ = state_ * kPcgMultiplier + inc_; }

std::uint64_t Pcg64::next64() {
    step();
    // XSL-RR output: xor the halves, rotate right by the top 6 bits.
    const auto hi = static_cast<std::uint64_t>(state_ >> 64);
    const auto lo = static_cast<std::uint64_t>(state_);
    const unsigned rot = static_cast<unsigned>(state_ >> 122);
    const std::uint64_t x = hi ^ lo;
    return (x >> rot) | (x << ((64 - rot) & 63));
}

std::uint32_t Pcg64::next32() {
    if (has_uint32_) {
        has_uint32_ = false;
        return uinteger_;
    }
    const std::uint64_t v = next64();
    has_uint32_ = true;
    uinteger_ = static_cast<std::uint32_t>(v >> 32);
    return static_cast<std::uint32_t>(v);
}

std::uint64_t Pcg64::interval(std::uint64_t max) {
    if (max == 0) return 0;  // numpy draws nothing for a one-value range
    std::uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    std::uint64_t value;
    if (max <= 0xffffffffULL) {
        do value = next32() & mask;
        while (value > max);
    } else {
        do value = next64() & mask;
        while (value > max);
    }
    return value;
}

std::vector<std::int64_t> permutation(Pcg64& generator, std::int64_t n) {
    if (n < 0) throw Error("permutation: negative size " + std::to_string(n));
    std::vector<std::int64_t> a(static_cast<std::size_t>(n));
    permutation_into(generator, a);
    return a;
}

void permutation_into(Pcg64& generator, std::vector<std::int64_t>& a) {
    const auto n = static_cast<std::int64_t>(a.size());
    for (std::int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = i;
    for (std::int64_t i = n - 1; i >= 1; --i) {
        const auto j = generator.interval(static_cast<std::uint64_t>(i));
        std::swap(a[static_cast<std::size_t>(i)], a[j]);
    }
}

std::vector<std::vector<std::int64_t>> epoch_permutations(std::uint64_t seed, std::int64_t n, int count) {
    if (count < 0) throw Error("epoch_permutations: negative count " + std::to_string(count));
    Pcg64 generator(seed);
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(static_cast<std::size_t>(count));
    for (int e = 0; e < count; ++e) out.push_back(permutation(generator, n));
    return out;
}

}  // namespace revgraph::rng
