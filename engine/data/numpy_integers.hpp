#pragma once
// numpy's Generator.integers(low, high, dtype=int64) for ranges of at most 2^32 values, drawn as
// numpy draws them: Lemire's multiply-shift with rejection over the generator's 32-bit stream
// (numpy/random/src/distributions/distributions.c, buffered_bounded_lemire_uint32; numpy >= 1.17).
// That stream is the one Generator.random(dtype=float32) reads too, so a draw that mixes the two
// calls stays in step with numpy.
//
// Not the same values as rng::Pcg64::interval(), which is numpy's *masked* rejection (what
// Generator.permutation and shuffle use): from one stream the two methods give different numbers
// (only ~1 in 10 labels agree for 0..9), so a caller says which numpy call it reproduces.
// Tested against numpy's own output (test/data/vectors.json, test/data/test_synthetic.cpp).
#include <cstdint>

#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"

namespace revgraph::data {

// A value in [0, max] from `next32` (a callable returning the next uint32 of the stream), exactly
// as numpy's Lemire draw: max 0 draws nothing; max 2^32 - 1 is one raw draw.
template <class Next32>
std::uint32_t lemire_bounded_u32(Next32&& next32, std::uint32_t max) {
    if (max == 0) return 0;
    if (max == 0xFFFFFFFFu) return next32();
    const std::uint32_t range = max + 1;
    std::uint64_t m = static_cast<std::uint64_t>(next32()) * range;
    auto leftover = static_cast<std::uint32_t>(m);
    if (leftover < range) {  // range bounds the threshold, so the modulo is only paid here
        const std::uint32_t threshold = (0xFFFFFFFFu - max) % range;  // = 2^32 mod range
        while (leftover < threshold) {
            m = static_cast<std::uint64_t>(next32()) * range;
            leftover = static_cast<std::uint32_t>(m);
        }
    }
    return static_cast<std::uint32_t>(m >> 32);
}

// One value of Generator.integers(low, high, dtype=np.int64): low <= value < high, at most 2^32 values.
inline std::int64_t numpy_integer(rng::Pcg64& generator, std::int64_t low, std::int64_t high) {
    if (high <= low || static_cast<std::uint64_t>(high - low) > (std::uint64_t{1} << 32))
        throw Error("numpy_integer: need low < high and at most 2^32 values");
    const auto max = static_cast<std::uint32_t>(static_cast<std::uint64_t>(high - low) - 1);
    return low + static_cast<std::int64_t>(lemire_bounded_u32([&generator] { return generator.next32(); }, max));
}

}  // namespace revgraph::data
