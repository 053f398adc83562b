#pragma once
// SHA-256 (FIPS 180-4, computed by libcrypto) for the hashes of docs/spec.md §7: raw little-endian
// bytes of C-order arrays.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/io/digest.hpp"

namespace revgraph::io {

class Sha256 : public Digest {
public:
    Sha256() : Digest(Algorithm::sha256) {}
    std::array<std::uint8_t, 32> digest();  // finalises; the object must not be updated after
};

std::string sha256_hex(const void* data, std::size_t size);

template <typename T>
std::string sha256_hex(std::span<const T> v) {
    return sha256_hex(v.data(), v.size_bytes());
}

template <typename T>
std::string sha256_hex(const std::vector<T>& v) {
    return sha256_hex(std::span<const T>(v));
}

}  // namespace revgraph::io
