// Hostile archives cost memory for what they hold, not for what their size fields claim: a
// deflate member recording 1032x its compressed size, an .npy header declaring a huge array
// whose data is not there, a gzip bomb past the cap. Peak RSS is measured around each parse.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "engine/error.hpp"
#include "engine/io/idx.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/zip.hpp"
#include "test/io/util.hpp"
#include "test/peak_rss.hpp"

using iotest::Bytes;
using revgraph::Error;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

void put_le32(Bytes& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// A one-member deflated archive whose recorded uncompressed size is replaced by `usize`.
Bytes archive_recording(const Bytes& member, std::uint32_t usize, std::string_view name = "x.npy") {
    const revgraph::io::ZipInput in{name, member};
    Bytes zip = revgraph::io::build_zip(std::span(&in, 1), {.deflate = true});
    put_le32(zip, 22, usize);  // local header
    const std::size_t cd = zip.size() - 22 - (46 + name.size());
    REQUIRE(zip[cd] == 0x50);
    REQUIRE(zip[cd + 1] == 0x4b);
    put_le32(zip, cd + 24, usize);  // central directory
    return zip;
}

Bytes random_bytes(std::size_t n) {
    std::mt19937 gen(7);
    Bytes b(n);
    for (auto& v : b) v = static_cast<std::uint8_t>(gen());
    return b;
}

Bytes gzip_of_zeros(std::size_t n) {
    z_stream z{};
    REQUIRE(::deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    Bytes zeros(1 << 20, 0), out(n / 500 + (1 << 16));
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    for (std::size_t done = 0; done < n; done += zeros.size()) {
        z.next_in = zeros.data();
        z.avail_in = static_cast<uInt>(std::min(zeros.size(), n - done));
        REQUIRE(::deflate(&z, done + zeros.size() >= n ? Z_FINISH : Z_NO_FLUSH) != Z_STREAM_ERROR);
    }
    out.resize(out.size() - z.avail_out);
    ::deflateEnd(&z);
    return out;
}

}  // namespace

TEST_CASE("zip: a member recording 1032x its compressed size is refused without allocating it") {
    // 1 MiB of incompressible bytes in an .npy whose header says so; the archive records ~1 GiB.
    const Bytes npy = revgraph::io::serialize_npy(revgraph::io::Array::from<std::uint8_t>({kMiB}, random_bytes(kMiB)));
    const Bytes plain = archive_recording(npy, static_cast<std::uint32_t>(npy.size()));
    const std::size_t csize = plain.size() - 2 * 5 - 30 - 46 - 22;  // roughly: the deflated member
    const auto claimed = static_cast<std::uint32_t>(std::min<std::uint64_t>(csize * 1032, 0xFFFFFFFEu));
    REQUIRE(claimed > 900u * kMiB);
    const Bytes bomb = archive_recording(npy, claimed);
    // Through the npz reader: the .npy header's size is compared before inflating the rest.
    std::string message;
    const auto npz_peak = revgraph::test::peak_rss_growth([&] {
        try {
            revgraph::io::parse_npz(bomb, "bomb.npz");
        } catch (const Error& e) { message = e.what(); }
    });
    CHECK(message.find("bomb.npz:x.npy: payload is") != std::string::npos);
    CHECK(npz_peak < 64 * kMiB);
    // Through the plain zip reader: inflated in bounded steps, so memory follows the real data.
    message.clear();
    const auto zip_peak = revgraph::test::peak_rss_growth([&] {
        try {
            revgraph::io::parse_zip(bomb, "bomb.zip");
        } catch (const Error& e) { message = e.what(); }
    });
    CHECK(message.find("decompressed to " + std::to_string(npy.size()) + " bytes") != std::string::npos);
    CHECK(zip_peak < 64 * kMiB);
    // The honest archive still reads.
    CHECK(revgraph::io::parse_npz(plain, "plain.npz").at("x").data.size() == static_cast<std::size_t>(kMiB));
}

TEST_CASE("npz: an .npy header declaring a huge array its data does not hold costs no memory") {
    // Header and recorded size both say 999,999,999 bytes; the deflated data holds 1 MiB.
    std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (999999999,), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header.push_back('\n');
    Bytes npy = {0x93,
                 'N',
                 'U',
                 'M',
                 'P',
                 'Y',
                 1,
                 0,
                 static_cast<std::uint8_t>(header.size()),
                 static_cast<std::uint8_t>(header.size() >> 8)};
    npy.insert(npy.end(), header.begin(), header.end());
    const Bytes data = random_bytes(kMiB);
    npy.insert(npy.end(), data.begin(), data.end());
    const auto declared = static_cast<std::uint32_t>(10 + header.size() + 999999999u);
    const Bytes bomb = archive_recording(npy, declared);
    std::string message;
    const auto peak = revgraph::test::peak_rss_growth([&] {
        try {
            revgraph::io::parse_npz(bomb, "huge.npz");
        } catch (const Error& e) { message = e.what(); }
    });
    CHECK(message.find("huge.npz: member 'x.npy': decompressed to ") != std::string::npos);
    CHECK(peak < 64 * kMiB);
}

TEST_CASE("idx: a gzip bomb is refused at the cap, without memory past it") {
    const Bytes bomb = gzip_of_zeros(100 * kMiB);  // ~100 KB on disk
    REQUIRE(bomb.size() < 200000);
    std::string message;
    const auto peak = revgraph::test::peak_rss_growth([&] {
        try {
            revgraph::io::gunzip(bomb, "bomb.gz", 64 * kMiB);
        } catch (const Error& e) { message = e.what(); }
    });
    CHECK(message == "bomb.gz: decompresses to more than 64 MiB");
    // Doubling past the cap would reach 128 MiB (and the old buffer beside it).
    CHECK(peak < 80 * kMiB);
    CHECK(revgraph::io::gunzip(gzip_of_zeros(3 * kMiB), "ok.gz", 64 * kMiB).size() ==
          static_cast<std::size_t>(3 * kMiB));
}
