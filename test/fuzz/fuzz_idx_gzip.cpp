// libFuzzer target: IDX files inside valid gzip: the input is compressed here (one or two gzip
// members, by its first byte), so the checks behind the gzip layer are reached with valid CRCs.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/idx.hpp"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
    z_stream z{};
    if (::deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) __builtin_trap();
    std::vector<std::uint8_t> out(::deflateBound(&z, size) + 32);
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = static_cast<uInt>(size);
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    if (::deflate(&z, Z_FINISH) != Z_STREAM_END) __builtin_trap();
    out.resize(out.size() - z.avail_out);
    ::deflateEnd(&z);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1 || size > (1u << 20)) return 0;
    const std::size_t split = (data[0] & 1) ? (size - 1) / 2 : size - 1;
    std::vector<std::uint8_t> gz = gzip(data + 1, split);
    if (split < size - 1) {  // a second gzip member, as `cat a.gz b.gz` makes
        const auto second = gzip(data + 1 + split, size - 1 - split);
        gz.insert(gz.end(), second.begin(), second.end());
    }
    try {
        revgraph::io::parse_idx_images(gz, "fuzz-images.gz");
    } catch (const revgraph::Error&) {}
    try {
        revgraph::io::parse_idx_labels(gz, "fuzz-labels.gz");
    } catch (const revgraph::Error&) {}
    return 0;
}
