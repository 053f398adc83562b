// SHA-256's fixed-size digest and the one-call helper over Digest.
#include "engine/io/sha256.hpp"

#include <algorithm>

namespace revgraph::io {

std::array<std::uint8_t, 32> Sha256::digest() {
    const auto bytes = finish();
    std::array<std::uint8_t, 32> out{};
    std::copy_n(bytes.begin(), out.size(), out.begin());
    return out;
}

std::string sha256_hex(const void* data, std::size_t size) {
    Sha256 hasher;
    hasher.update(data, size);
    return hasher.hex_digest();
}

}  // namespace revgraph::io
