#include "engine/io/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <string>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

namespace revgraph::io {

namespace {

constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
// Far above MNIST's 47 MB: a bound that stops a corrupt or hostile .gz from eating memory.

std::uint32_t be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::string limit_text(std::uint64_t bytes) {
    if (bytes % (std::uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
    if (bytes % (std::uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

bool is_gzip(std::span<const std::uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

// Raw bytes, decompressed first when they are gzip.
std::vector<std::uint8_t> plain(std::span<const std::uint8_t> bytes, std::string_view source) {
    if (is_gzip(bytes)) return gunzip(bytes, source);
    return {bytes.begin(), bytes.end()};
}

std::string magic_name(std::uint32_t magic) {
    return magic == kImagesMagic   ? "an images file (2051)"
           : magic == kLabelsMagic ? "a labels file (2049)"
                                   : "magic " + std::to_string(magic);
}

}  // namespace

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, std::string_view source, std::uint64_t max_bytes) {
    const std::string where(source);
    // The last member's trailer records its size mod 2^32: a hint only (a truncated or hostile
    // file may lie), so it is used only where deflate could produce that much (at most about
    // 1032 bytes per input byte) and never past the cap. Growing from there doubles, but never
    // past the cap either, so the cap bounds the buffer.
    std::vector<std::uint8_t> out;
    if (in.size() >= 18) {
        const std::size_t t = in.size() - 4;
        const std::uint64_t hint = std::uint64_t{in[t]} | std::uint64_t{in[t + 1]} << 8 |
                                   std::uint64_t{in[t + 2]} << 16 | std::uint64_t{in[t + 3]} << 24;
        if (hint <= std::uint64_t{in.size()} * 1032) out.reserve(static_cast<std::size_t>(std::min(hint, max_bytes)));
    }
    z_stream z{};
    if (::inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(where + ": cannot initialise zlib");
    std::size_t in_pos = 0;
    std::uint8_t buf[1 << 16];
    std::string problem;
    // gzip allows several members back to back; each ends in its own CRC-32 and length,
    // which zlib checks.
    while (problem.empty()) {
        const std::size_t in_chunk = std::min<std::size_t>(in.size() - in_pos, UINT_MAX);
        z.next_in = const_cast<Bytef*>(in.data() + in_pos);
        z.avail_in = static_cast<uInt>(in_chunk);
        z.next_out = buf;
        z.avail_out = sizeof buf;
        const int ret = ::inflate(&z, Z_NO_FLUSH);
        in_pos += in_chunk - z.avail_in;
        const std::size_t produced = sizeof buf - z.avail_out;
        if (produced > max_bytes - out.size()) {  // checked before the bytes are kept
            problem = "decompresses to more than " + limit_text(max_bytes);
            break;
        }
        if (out.size() + produced > out.capacity())
            out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, 2 * out.capacity() + produced)));
        out.insert(out.end(), buf, buf + produced);
        if (ret == Z_STREAM_END) {
            if (in_pos == in.size()) break;
            if (!is_gzip(in.subspan(in_pos)))
                problem = "unexpected bytes after the gzip data";
            else
                ::inflateReset(&z);
        } else if (ret == Z_BUF_ERROR && in_pos == in.size())
            problem = "gzip data is truncated";
        else if (ret != Z_OK)
            problem = std::string("gzip data is corrupt (") + (z.msg ? z.msg : "zlib error") + ")";
    }
    ::inflateEnd(&z);
    if (!problem.empty()) throw Error(where + ": " + problem);
    return out;
}

IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source) {
    const std::string where(source);
    const std::vector<std::uint8_t> b = plain(bytes, source);
    if (b.size() < 4) throw Error(where + ": not an IDX images file (shorter than its magic number)");
    const std::uint32_t magic = be32(b.data());
    if (magic != kImagesMagic)
        throw Error(where + ": expected an IDX images file (magic 2051), found " + magic_name(magic));
    if (b.size() < 16) throw Error(where + ": truncated IDX header");
    const std::uint32_t count = be32(b.data() + 4), rows = be32(b.data() + 8), cols = be32(b.data() + 12);
    if (rows != kMnistSide || cols != kMnistSide)
        throw Error(where + ": images are " + std::to_string(rows) + "x" + std::to_string(cols) + ", expected 28x28");
    const std::uint64_t expected = std::uint64_t{count} * kMnistSide * kMnistSide;
    if (b.size() - 16 != expected)
        throw Error(where + ": " + std::to_string(count) + " images need " + std::to_string(expected) +
                    " pixel bytes, the file has " + std::to_string(b.size() - 16));
    return {count, std::vector<std::uint8_t>(b.begin() + 16, b.end())};
}

std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source) {
    const std::string where(source);
    const std::vector<std::uint8_t> b = plain(bytes, source);
    if (b.size() < 4) throw Error(where + ": not an IDX labels file (shorter than its magic number)");
    const std::uint32_t magic = be32(b.data());
    if (magic != kLabelsMagic)
        throw Error(where + ": expected an IDX labels file (magic 2049), found " + magic_name(magic));
    if (b.size() < 8) throw Error(where + ": truncated IDX header");
    const std::uint32_t count = be32(b.data() + 4);
    if (b.size() - 8 != count)
        throw Error(where + ": " + std::to_string(count) + " labels need " + std::to_string(count) +
                    " bytes, the file has " + std::to_string(b.size() - 8));
    std::vector<std::uint8_t> labels(b.begin() + 8, b.end());
    const auto bad = std::find_if(labels.begin(), labels.end(), [](std::uint8_t l) { return l > 9; });
    if (bad != labels.end())
        throw Error(where + ": label " + std::to_string(*bad) + " at index " + std::to_string(bad - labels.begin()) +
                    " is outside 0..9");
    return labels;
}

IdxImages read_idx_images(const std::filesystem::path& path) {
    return parse_idx_images(read_file(path), path.string());
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
    return parse_idx_labels(read_file(path), path.string());
}

MnistSet read_mnist(const std::filesystem::path& images, const std::filesystem::path& labels) {
    MnistSet set{read_idx_images(images), read_idx_labels(labels)};
    if (static_cast<std::uint64_t>(set.images.count) != set.labels.size())
        throw Error(images.string() + " has " + std::to_string(set.images.count) + " images but " + labels.string() +
                    " has " + std::to_string(set.labels.size()) + " labels");
    return set;
}

}  // namespace revgraph::io
