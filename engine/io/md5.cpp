// MD5's fixed-size digest and the one-call helper over Digest.
#include "engine/io/md5.hpp"

#include <algorithm>

namespace revgraph::io {

std::array<std::uint8_t, 16> Md5::digest() {
    const auto bytes = finish();
    std::array<std::uint8_t, 16> out{};
    std::copy_n(bytes.begin(), out.size(), out.begin());
    return out;
}

std::string md5_hex(const void* data, std::size_t size) {
    Md5 h;
    h.update(data, size);
    return h.hex_digest();
}

}  // namespace revgraph::io
