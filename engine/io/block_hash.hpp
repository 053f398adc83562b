#pragma once
// What MD5 and SHA-256 share: 64-byte blocks fed to a compression function, and the final padding
// (a 1 bit, zeros to 56 mod 64 bytes, the message length in bits). Derived supplies
// compress(block), kName, and kBigEndianLength (SHA-256 writes the length big-endian, MD5 little).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/error.hpp"

namespace revgraph::io {

template <typename Derived>
class BlockHash {
public:
    void update(const void* data, std::size_t size) {
        if (size == 0) return;  // data may be null for an empty buffer
        if (data == nullptr) throw Error(std::string(Derived::kName) + ": null data with nonzero size");
        const auto* p = static_cast<const std::uint8_t*>(data);
        length_ += size;
        if (fill_ > 0) {
            const std::size_t take = size < 64 - fill_ ? size : 64 - fill_;
            std::memcpy(block_ + fill_, p, take);
            fill_ += take;
            p += take;
            size -= take;
            if (fill_ < 64) return;
            self().compress(block_);
            fill_ = 0;
        }
        for (; size >= 64; p += 64, size -= 64) self().compress(p);
        std::memcpy(block_, p, size);
        fill_ = size;
    }

    // digest() as lowercase hex; finalises like digest().
    std::string hex_digest() {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string s;
        for (const std::uint8_t byte : self().digest()) {
            s.push_back(kHex[byte >> 4]);
            s.push_back(kHex[byte & 15]);
        }
        return s;
    }

protected:
    // The padding and the last compressions; the object must not be updated after.
    void finish() {
        const std::uint64_t bits = length_ * 8;
        block_[fill_++] = 0x80;
        if (fill_ > 56) {
            std::memset(block_ + fill_, 0, 64 - fill_);
            self().compress(block_);
            fill_ = 0;
        }
        std::memset(block_ + fill_, 0, 56 - fill_);
        for (int i = 0; i < 8; ++i)
            block_[56 + i] = static_cast<std::uint8_t>(bits >> (Derived::kBigEndianLength ? 56 - 8 * i : 8 * i));
        self().compress(block_);
        fill_ = 0;
    }

private:
    Derived& self() { return static_cast<Derived&>(*this); }
    std::uint64_t length_ = 0;
    std::uint8_t block_[64];
    std::size_t fill_ = 0;
};

}  // namespace revgraph::io
