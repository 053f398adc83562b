#pragma once
// MD5 (RFC 1321), only to compare input files with the MD5 sums the MNIST distribution publishes;
// it is no integrity guarantee against a forger (SHA-256 is recorded beside it for that).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace revgraph::io {

class Md5 {
public:
    Md5();
    void update(const void* data, std::size_t size);
    std::array<std::uint8_t, 16> digest();  // finalises; the object must not be updated after
    std::string hex_digest();

private:
    std::uint64_t length_ = 0;
    std::uint32_t h_[4];
    std::uint8_t block_[64];
    std::size_t fill_ = 0;
    void compress(const std::uint8_t* block);
};

std::string md5_hex(const void* data, std::size_t size);

template <typename T>
std::string md5_hex(const std::vector<T>& v) {
    return md5_hex(v.data(), v.size() * sizeof(T));
}

}  // namespace revgraph::io
