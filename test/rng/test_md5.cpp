// MD5 against RFC 1321's test suite (appendix A.5) and against itself fed in uneven pieces.
// test/io/check_md5.py compares it with Python's hashlib on random inputs of many lengths.
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "engine/io/md5.hpp"

using revgraph::io::Md5;
using revgraph::io::md5_hex;

namespace {
std::string md5_of(const std::string& s) { return md5_hex(s.data(), s.size()); }
}  // namespace

TEST_CASE("md5: RFC 1321 test suite") {
    CHECK(md5_of("") == "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(md5_of("a") == "0cc175b9c0f1b6a831c399e269772661");
    CHECK(md5_of("abc") == "900150983cd24fb0d6963f7d28e17f72");
    CHECK(md5_of("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
    CHECK(md5_of("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
    CHECK(md5_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
          "d174ab98d277d9f5a5611c2c9f419d9f");
    CHECK(md5_of("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
          "57edf4a22be3c955ac49da2e2107b67a");
}

TEST_CASE("md5: pieces of any size give the digest of the whole") {
    std::vector<std::uint8_t> data(1000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7 % 253);
    const std::string whole = md5_hex(data);
    for (std::size_t piece : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 127u, 999u}) {
        Md5 h;
        for (std::size_t at = 0; at < data.size(); at += piece)
            h.update(data.data() + at, std::min(piece, data.size() - at));
        CHECK(h.hex_digest() == whole);
    }
    CHECK(md5_hex(nullptr, 0) == "d41d8cd98f00b204e9800998ecf8427e");
}
