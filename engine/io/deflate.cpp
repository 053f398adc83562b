#include "engine/io/deflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <numeric>

#include "engine/error.hpp"
#include "engine/parallel_for.hpp"

namespace revgraph::io {

namespace {

// Below this many bytes in all, threads cost more than they save (the small state and predictions
// archives): everything is compressed on the caller's thread.
constexpr std::size_t kThreadedBytes = std::size_t{1} << 20;

}  // namespace

Deflated deflate_raw(std::span<const std::uint8_t> in) {
    z_stream z{};
    if (::deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw Error("cannot initialise zlib");
    Deflated d;
    // deflateBound is an upper limit for one deflate call with Z_FINISH; sized once, so the output
    // is written in place instead of copied out of a bounce buffer and regrown.
    d.bytes.resize(::deflateBound(&z, static_cast<uLong>(std::min<std::size_t>(in.size(), ULONG_MAX))));
    std::uint64_t in_pos = 0, out_pos = 0;
    int ret = Z_OK;
    while (ret != Z_STREAM_END) {
        if (out_pos == d.bytes.size()) d.bytes.resize(d.bytes.size() + (std::size_t{1} << 16));
        const std::uint64_t in_chunk = std::min<std::uint64_t>(in.size() - in_pos, UINT_MAX);
        const std::uint64_t out_chunk = std::min<std::uint64_t>(d.bytes.size() - out_pos, UINT_MAX);
        z.next_in = const_cast<Bytef*>(in.data() + in_pos);
        z.avail_in = static_cast<uInt>(in_chunk);
        z.next_out = d.bytes.data() + out_pos;
        z.avail_out = static_cast<uInt>(out_chunk);
        const bool last = in_pos + in_chunk == in.size();
        ret = ::deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
        if (ret == Z_STREAM_ERROR) {
            ::deflateEnd(&z);
            throw Error("zlib deflate failed");
        }
        in_pos += in_chunk - z.avail_in;
        out_pos += out_chunk - z.avail_out;
    }
    ::deflateEnd(&z);
    d.bytes.resize(out_pos);
    d.crc32 = static_cast<std::uint32_t>(::crc32_z(::crc32_z(0, nullptr, 0), in.data(), in.size()));
    return d;
}

std::vector<Deflated> deflate_raw_each(std::span<const std::span<const std::uint8_t>> inputs) {
    std::vector<Deflated> out(inputs.size());
    const std::size_t total = std::accumulate(inputs.begin(), inputs.end(), std::size_t{0},
                                              [](std::size_t s, const auto& in) { return s + in.size(); });
    // Side by side only where it pays: below kThreadedBytes a thread costs more than it saves.
    const unsigned threads = total < kThreadedBytes ? 1u : usable_cpus();
    // The largest first: the longest jobs start at once and the small ones fill the gaps.
    std::vector<std::size_t> order(inputs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return inputs[a].size() > inputs[b].size(); });
    parallel_for(order.size(), threads, [&](std::size_t k) { out[order[k]] = deflate_raw(inputs[order[k]]); });
    return out;
}

}  // namespace revgraph::io
