#pragma once
// Raw deflate (no zlib or gzip wrapper) as Python's zipfile asks zlib for it: level 6, a 15-bit
// window, memLevel 8, the default strategy. The zip writer (zip.hpp) stores members this way.
#include <cstdint>
#include <span>
#include <vector>

namespace revgraph::io {

// One member's compressed bytes and the CRC-32 of its uncompressed bytes.
struct Deflated {
    std::vector<std::uint8_t> bytes;
    std::uint32_t crc32 = 0;
};

Deflated deflate_raw(std::span<const std::uint8_t> in);

// deflate_raw of each input, in input order, byte for byte what one call each gives: every input is
// its own stream with the same settings, so which thread compresses it cannot change its bytes.
// Large inputs are compressed on up to one thread per core, the largest first, so that the members
// of an npz archive (two images arrays of the same size, in a draw) take the time of one. Throws
// Error as deflate_raw does.
std::vector<Deflated> deflate_raw_each(std::span<const std::span<const std::uint8_t>> inputs);

}  // namespace revgraph::io
