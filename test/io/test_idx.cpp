#include <doctest/doctest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/idx.hpp"
#include "test/io/util.hpp"

using iotest::Bytes;
using iotest::error_of;
using revgraph::Error;
using revgraph::io::parse_idx_images;
using revgraph::io::parse_idx_labels;

namespace {

void put_be32(Bytes& b, std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

Bytes images_file(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t cols = 28, std::uint32_t magic = 2051) {
    Bytes b;
    put_be32(b, magic);
    put_be32(b, count);
    put_be32(b, rows);
    put_be32(b, cols);
    for (std::uint32_t i = 0; i < count * rows * cols; ++i) b.push_back(static_cast<std::uint8_t>(i * 7 + i / 784));
    return b;
}

Bytes labels_file(const Bytes& labels, std::uint32_t magic = 2049) {
    Bytes b;
    put_be32(b, magic);
    put_be32(b, static_cast<std::uint32_t>(labels.size()));
    b.insert(b.end(), labels.begin(), labels.end());
    return b;
}

// gzip as the MNIST distribution files are, through zlib's gzip wrapper (windowBits 16+15).
Bytes gzip(const Bytes& in) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    Bytes out(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

}  // namespace

TEST_CASE("idx: images and labels parse, raw and gzip") {
    const Bytes img = images_file(3);
    const auto images = parse_idx_images(img, "img");
    CHECK(images.count == 3);
    REQUIRE(images.pixels.size() == 3 * 784);
    CHECK(images.pixels == Bytes(img.begin() + 16, img.end()));
    CHECK(parse_idx_images(gzip(img), "img.gz").pixels == images.pixels);

    const Bytes lab = labels_file({0, 9, 4});
    CHECK(parse_idx_labels(lab, "lab") == Bytes{0, 9, 4});
    CHECK(parse_idx_labels(gzip(lab), "lab.gz") == Bytes{0, 9, 4});

    // Two gzip members back to back are one file (as `cat a.gz b.gz` makes).
    Bytes first(lab.begin(), lab.begin() + 5), rest(lab.begin() + 5, lab.end());
    Bytes two = gzip(first);
    const Bytes second = gzip(rest);
    two.insert(two.end(), second.begin(), second.end());
    CHECK(parse_idx_labels(two, "lab.gz") == Bytes{0, 9, 4});

    CHECK(parse_idx_images(images_file(0), "img").count == 0);
    CHECK(parse_idx_labels(labels_file({}), "lab").empty());
}

TEST_CASE("idx: headers and lengths are checked exactly") {
    CHECK(error_of([] {
              parse_idx_images(labels_file({1, 2}), "x");
          }) == "x: expected an IDX images file (magic 2051), found a labels file (2049)");
    CHECK(error_of([] { parse_idx_labels(images_file(1), "x"); }) ==
          "x: expected an IDX labels file (magic 2049), found an images file (2051)");
    CHECK(error_of([] { parse_idx_images(images_file(1, 28, 28, 2052), "x"); }).find("found magic 2052") !=
          std::string::npos);
    CHECK(error_of([] { parse_idx_images(images_file(1, 27, 28), "x"); }) == "x: images are 27x28, expected 28x28");
    CHECK(error_of([] { parse_idx_labels(labels_file({3, 10, 1}), "x"); }) == "x: label 10 at index 1 is outside 0..9");

    Bytes img = images_file(2);
    img.pop_back();
    CHECK(error_of([&] { parse_idx_images(img, "x"); }) == "x: 2 images need 1568 pixel bytes, the file has 1567");
    img = images_file(2);
    img.push_back(0);
    CHECK_THROWS_AS(parse_idx_images(img, "x"), Error);
    Bytes lab = labels_file({1, 2, 3});
    lab[7] = 4;  // count says 4, file has 3
    CHECK(error_of([&] { parse_idx_labels(lab, "x"); }) == "x: 4 labels need 4 bytes, the file has 3");

    // Every truncation of either kind of file fails, raw or compressed.
    const Bytes full = images_file(1), full_gz = gzip(full), lab_gz = gzip(labels_file({5, 6}));
    for (std::size_t n = 0; n < full.size(); n += 37)
        CHECK_THROWS_AS(parse_idx_images(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)), "x"),
                        Error);
    for (std::size_t n = 2; n < full_gz.size(); ++n) {
        CAPTURE(n);
        CHECK_THROWS_AS(parse_idx_images(Bytes(full_gz.begin(), full_gz.begin() + static_cast<std::ptrdiff_t>(n)), "x"),
                        Error);
    }
    for (std::size_t n = 2; n < lab_gz.size(); ++n)
        CHECK_THROWS_AS(parse_idx_labels(Bytes(lab_gz.begin(), lab_gz.begin() + static_cast<std::ptrdiff_t>(n)), "x"),
                        Error);
    // A changed byte in the gzip trailer (CRC-32) or garbage after it.
    Bytes bad = full_gz;
    bad[bad.size() - 6] ^= 1;
    CHECK(error_of([&] { parse_idx_images(bad, "x.gz"); }).rfind("x.gz: gzip data is corrupt", 0) == 0);
    bad = full_gz;
    bad.push_back(0);
    CHECK(error_of([&] { parse_idx_images(bad, "x.gz"); }) == "x.gz: unexpected bytes after the gzip data");
}

TEST_CASE("idx: files on disk, and a mismatched pair") {
    iotest::ScratchDir dir;
    revgraph::io::write_file_atomic(dir / "img.gz", gzip(images_file(2)));
    revgraph::io::write_file_atomic(dir / "lab", labels_file({1, 2}));
    revgraph::io::write_file_atomic(dir / "lab3", labels_file({1, 2, 3}));
    const auto set = revgraph::io::read_mnist(dir / "img.gz", dir / "lab");
    CHECK(set.images.count == 2);
    CHECK(set.labels == Bytes{1, 2});
    CHECK(error_of([&] { revgraph::io::read_mnist(dir / "img.gz", dir / "lab3"); }).find("has 2 images but") !=
          std::string::npos);
    CHECK(error_of([&] { revgraph::io::read_idx_labels(dir / "nope"); }).find("nope") != std::string::npos);
}
