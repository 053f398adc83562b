#pragma once
// MD5 (RFC 1321, computed by libcrypto), only to compare input files with the MD5 sums the MNIST
// distribution publishes; it is no integrity guarantee against a forger (SHA-256 is recorded beside
// it for that).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/digest.hpp"

namespace revgraph::io {

class Md5 : public Digest {
public:
    Md5() : Digest(Algorithm::md5) {}
    std::array<std::uint8_t, 16> digest();  // finalises; the object must not be updated after
};

std::string md5_hex(const void* data, std::size_t size);

template <typename T>
std::string md5_hex(const std::vector<T>& v) {
    return md5_hex(v.data(), v.size() * sizeof(T));
}

}  // namespace revgraph::io
