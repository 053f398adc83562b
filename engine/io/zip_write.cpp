// The zip writer behind serialize_npz: what Python's zipfile writes for np.savez, with fixed
// 1980-01-01 timestamps, so equal inputs give byte-equal archives. It stays our own (reading is
// libzip's, zip_read.cpp) because libzip 1.7.3 cannot write these bytes: it records "version made
// by" 6.3 and "needed to extract" 1.0 where the archives the suites and tools/arm-check hash say
// 4.5 and 2.0, and zip_file_set_mtime goes through the local time zone. A new writer would change
// every state.npz hash compared in the tests.
#include <zlib.h>

#include <algorithm>
#include <set>

#include "engine/error.hpp"
#include "engine/io/deflate.hpp"
#include "engine/io/zip.hpp"

namespace revgraph::io {

namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kZip64EndSize = 56;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kSentinel32 = 0xFFFFFFFF;
constexpr std::uint16_t kSentinel16 = 0xFFFF;
// Python's zipfile switches to ZIP64 above 2 GiB - 1 rather than 4 GiB - 1, for readers that
// treat the 32-bit fields as signed; the writer does the same.
constexpr std::uint64_t kZip64Limit = 0x7FFFFFFF;
// The date 1980-01-01 00:00 in MS-DOS format: the earliest a ZIP header can hold.
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1, kDosTime = 0;

std::uint32_t crc32_of(std::span<const std::uint8_t> data) {
    return static_cast<std::uint32_t>(::crc32_z(::crc32_z(0, nullptr, 0), data.data(), data.size()));
}

class Writer {
public:
    std::vector<std::uint8_t> out;
    void u16(std::uint64_t v) { le(v, 2); }
    void u32(std::uint64_t v) { le(v, 4); }
    void u64(std::uint64_t v) { le(v, 8); }
    void bytes(std::span<const std::uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }
    void text(std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }

private:
    void le(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
};

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

std::vector<std::uint8_t> build_zip(std::span<const ZipInput> members, const ZipOptions& options) {
    struct Written {
        std::string_view name;
        std::uint16_t flags;
        std::uint32_t crc;
        std::uint64_t csize, usize, offset;
        bool zip64;
    };
    std::vector<Written> written;
    std::set<std::string_view> names;
    Writer w;
    const std::uint16_t method = options.deflate ? 8 : 0;
    // The fields the local header and the central directory entry share, in the same order (from the
    // flags to the name's length): written once, so the two can never disagree.
    const auto same_in_both_headers = [&](const Written& e) {
        w.u16(e.flags);
        w.u16(method);
        w.u16(kDosTime);
        w.u16(kDosDate);
        w.u32(e.crc);
        w.u32(e.zip64 ? kSentinel32 : e.csize);
        w.u32(e.zip64 ? kSentinel32 : e.usize);
        w.u16(static_cast<std::uint16_t>(e.name.size()));
    };
    for (const ZipInput& m : members) {
        if (m.name.empty() || m.name.size() > 0xFFFF || m.name.find('\0') != std::string_view::npos)
            throw Error("cannot store member '" + std::string(m.name) + "': invalid name");
        if (!names.insert(m.name).second) throw Error("cannot store member '" + std::string(m.name) + "' twice");
    }
    // Every member compressed first, side by side where it pays (deflate.hpp): the same bytes as one
    // after another, in about the time of the largest.
    std::vector<std::span<const std::uint8_t>> datas;
    for (const ZipInput& m : members) datas.push_back(m.data);
    const std::vector<Deflated> packed = options.deflate ? deflate_raw_each(datas) : std::vector<Deflated>{};
    std::size_t payloads = 0;
    for (std::size_t i = 0; i < members.size(); ++i)
        payloads += options.deflate ? packed[i].bytes.size() : members[i].data.size();
    w.out.reserve(payloads + members.size() * 200);  // headers: well under 200 bytes a member, names aside
    for (std::size_t i = 0; i < members.size(); ++i) {
        const ZipInput& m = members[i];
        const std::span<const std::uint8_t> payload =
            options.deflate ? std::span<const std::uint8_t>(packed[i].bytes) : m.data;
        Written e{m.name,
                  static_cast<std::uint16_t>(is_ascii(m.name) ? 0 : 0x0800),
                  options.deflate ? packed[i].crc32 : crc32_of(m.data),
                  payload.size(),
                  m.data.size(),
                  w.out.size(),
                  false};
        e.zip64 = options.force_zip64 || e.usize > kZip64Limit || e.csize > kZip64Limit;

        w.u32(kLocalSig);
        w.u16(e.zip64 ? 45 : 20);  // version needed to extract
        same_in_both_headers(e);
        w.u16(e.zip64 ? 20 : 0);
        w.text(m.name);
        if (e.zip64) {
            w.u16(kZip64ExtraId);
            w.u16(16);
            w.u64(e.usize);
            w.u64(e.csize);
        }
        w.bytes(payload);
        written.push_back(e);
    }

    const std::uint64_t cd_offset = w.out.size();
    for (const Written& e : written) {
        const bool big_offset = options.force_zip64 || e.offset > kZip64Limit;
        const std::uint16_t extra = static_cast<std::uint16_t>((e.zip64 ? 16 : 0) + (big_offset ? 8 : 0));
        w.u32(kCentralSig);
        w.u16((3 << 8) | 45);  // made by: Unix, spec 4.5
        w.u16(e.zip64 || big_offset ? 45 : 20);
        same_in_both_headers(e);
        w.u16(extra == 0 ? 0 : extra + 4);
        w.u16(0);               // comment length
        w.u16(0);               // disk
        w.u16(0);               // internal attributes
        w.u32(0100644u << 16);  // external attributes: a regular file, rw-r--r--
        w.u32(big_offset ? kSentinel32 : e.offset);
        w.text(e.name);
        if (extra != 0) {
            w.u16(kZip64ExtraId);
            w.u16(extra);
            if (e.zip64) {
                w.u64(e.usize);
                w.u64(e.csize);
            }
            if (big_offset) w.u64(e.offset);
        }
    }
    const std::uint64_t cd_size = w.out.size() - cd_offset;
    const std::uint64_t count = written.size();
    const bool zip64_end =
        options.force_zip64 || count >= kSentinel16 || cd_size > kZip64Limit || cd_offset > kZip64Limit;
    if (zip64_end) {
        const std::uint64_t z64 = w.out.size();
        w.u32(kZip64EndSig);
        w.u64(kZip64EndSize - 12);
        w.u16((3 << 8) | 45);
        w.u16(45);
        w.u32(0);
        w.u32(0);
        w.u64(count);
        w.u64(count);
        w.u64(cd_size);
        w.u64(cd_offset);
        w.u32(kZip64LocatorSig);
        w.u32(0);
        w.u64(z64);
        w.u32(1);
    }
    w.u32(kEndSig);
    w.u16(0);
    w.u16(0);
    w.u16(zip64_end ? kSentinel16 : count);
    w.u16(zip64_end ? kSentinel16 : count);
    w.u32(zip64_end ? kSentinel32 : cd_size);
    w.u32(zip64_end ? kSentinel32 : cd_offset);
    w.u16(0);  // comment length
    return std::move(w.out);
}

}  // namespace revgraph::io
