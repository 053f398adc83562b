#pragma once
// SHA-256 (FIPS 180-4) for the hashes of docs/spec.md §7: raw little-endian bytes of C-order arrays.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace revgraph::io {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t size);
    std::array<std::uint8_t, 32> digest();  // finalises; the object must not be updated after
    std::string hex_digest();

private:
    std::uint64_t length_ = 0;
    std::uint32_t h_[8];
    std::uint8_t block_[64];
    std::size_t fill_ = 0;
    void compress(const std::uint8_t* block);
};

std::string sha256_hex(const void* data, std::size_t size);

template <typename T>
std::string sha256_hex(const std::vector<T>& v) {
    return sha256_hex(v.data(), v.size() * sizeof(T));
}

}  // namespace revgraph::io
