#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/io/sha256.hpp"

using revgraph::io::Sha256;
using revgraph::io::sha256_hex;

namespace {
std::string sha256_of(const std::string& s) { return sha256_hex(s.data(), s.size()); }

std::vector<std::uint8_t> pattern(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i % 251);
    return v;
}
}  // namespace

TEST_CASE("sha256: FIPS 180-4 example messages") {
    CHECK(sha256_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
                    "pqrsmnopqrstnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    CHECK(sha256_of(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: lengths around the padding boundary (values from Python's hashlib)") {
    const std::pair<std::size_t, const char*> cases[] = {
        {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
        {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
        {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
        {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
        {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
        {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
        {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
        {128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"},
        {1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.first);
        CHECK(sha256_hex(pattern(c.first)) == c.second);
    }
}

TEST_CASE("sha256: streaming in uneven pieces equals one call") {
    const auto data = pattern(1000);
    const std::string want = "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d";
    for (std::size_t piece : {1u, 3u, 63u, 64u, 65u, 200u}) {
        CAPTURE(piece);
        Sha256 h;
        for (std::size_t at = 0; at < data.size(); at += piece) {
            h.update(data.data() + at, std::min(piece, data.size() - at));
        }
        CHECK(h.hex_digest() == want);
    }
    Sha256 h;
    h.update(nullptr, 0);  // an empty array may have no storage
    CHECK(h.hex_digest() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Sha256 bad;
    CHECK_THROWS_AS(bad.update(nullptr, 1), revgraph::Error);
    Sha256 done;
    done.update("abc", 3);
    CHECK(done.hex_digest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK_THROWS_AS(done.update("d", 1), revgraph::Error);  // a finalised digest refuses more input
    CHECK_THROWS_AS(done.digest(), revgraph::Error);        // and a second digest
    // A copy goes on from the state copied, independently of the original.
    Sha256 prefix;
    prefix.update("abcdbcdecdefdefgefghfghighijhijk", 32);
    Sha256 copy = prefix;
    copy.update("ijkljklmklmnlmnomnopnopq", 24);
    prefix.update("x", 1);
    CHECK(copy.hex_digest() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(prefix.hex_digest() == sha256_of("abcdbcdecdefdefgefghfghighijhijkx"));
}

TEST_CASE("sha256: hashes typed arrays as their raw little-endian bytes") {
    const std::vector<std::int64_t> perm = {0};
    // numpy: hashlib.sha256(np.array([0], np.int64).tobytes()); also pcg64_permutation.json (n=1).
    CHECK(sha256_hex(perm) == "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
    CHECK(sha256_hex(std::vector<float>{}) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
