#include "engine/io/zip.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <set>

#include "engine/error.hpp"
#include "engine/io/deflate.hpp"

namespace revgraph::io {

namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
constexpr std::size_t kZip64EndSize = 56, kZip64LocatorSize = 20;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kSentinel32 = 0xFFFFFFFF;
constexpr std::uint16_t kSentinel16 = 0xFFFF;
// Python's zipfile switches to ZIP64 above 2 GiB - 1 rather than 4 GiB - 1, for readers that
// treat the 32-bit fields as signed; the writer does the same.
constexpr std::uint64_t kZip64Limit = 0x7FFFFFFF;
// Deflate cannot expand data by more than about 1032:1, so a recorded size beyond that is a
// corrupt header and must not drive an allocation.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
// The date 1980-01-01 00:00 in MS-DOS format: the earliest a ZIP header can hold.
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1, kDosTime = 0;

// Bounds-checked little-endian reads over the archive; any read past the end is truncation.
class Reader {
public:
    Reader(std::span<const std::uint8_t> bytes, const std::string& source) : b_(bytes), source_(source) {}

    [[noreturn]] void fail(const std::string& what) const { throw Error(source_ + ": " + what); }

    void need(std::uint64_t offset, std::uint64_t size, const char* what) const {
        if (offset > b_.size() || size > b_.size() - offset)
            fail(std::string("truncated or corrupt archive (") + what + " runs past the end of the file)");
    }
    std::uint64_t le(std::uint64_t offset, int bytes) const {
        need(offset, static_cast<std::uint64_t>(bytes), "field");
        std::uint64_t v = 0;
        for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b_[offset + static_cast<std::uint64_t>(i)];
        return v;
    }
    std::uint16_t u16(std::uint64_t o) const { return static_cast<std::uint16_t>(le(o, 2)); }
    std::uint32_t u32(std::uint64_t o) const { return static_cast<std::uint32_t>(le(o, 4)); }
    std::uint64_t u64(std::uint64_t o) const { return le(o, 8); }
    std::string_view text(std::uint64_t o, std::uint64_t n) const {
        need(o, n, "name");
        return {reinterpret_cast<const char*>(b_.data() + o), n};
    }
    std::span<const std::uint8_t> span(std::uint64_t o, std::uint64_t n) const {
        need(o, n, "member data");
        return b_.subspan(o, n);
    }
    std::uint64_t size() const { return b_.size(); }

private:
    std::span<const std::uint8_t> b_;
    const std::string& source_;
};

struct Entry {
    std::string name;
    std::uint16_t flags = 0, method = 0;
    std::uint32_t crc = 0;
    std::uint64_t csize = 0, usize = 0, offset = 0;
    std::uint64_t data_start = 0;
};

// The ZIP64 extra field of a central directory entry holds, in this order, only those of
// (uncompressed size, compressed size, local header offset, disk) whose fixed-size field is
// the 0xFFFF.. sentinel. A local header's ZIP64 field always holds both sizes (APPNOTE 4.5.3);
// Python writes it even when the 32-bit fields hold the real values. Returns whether one was
// present; checks that the extra block is well formed either way.
bool read_zip64_extra(const Reader& r, std::uint64_t extra, std::uint64_t extra_len, const std::string& who,
                      std::uint64_t* usize, std::uint64_t* csize, std::uint64_t* offset) {
    const bool local = offset == nullptr;
    bool seen = false;
    std::uint64_t pos = extra;
    const std::uint64_t end = extra + extra_len;
    while (pos < end) {
        if (end - pos < 4) r.fail(who + ": corrupt extra field");
        const std::uint16_t id = r.u16(pos), len = r.u16(pos + 2);
        if (len > end - pos - 4) r.fail(who + ": corrupt extra field");
        if (id == kZip64ExtraId) {
            if (seen) r.fail(who + ": two ZIP64 extra fields");
            seen = true;
            std::uint64_t p = pos + 4;
            const std::uint64_t field_end = p + len;
            auto take = [&](std::uint64_t* field) {
                if (field_end - p < 8) r.fail(who + ": ZIP64 extra field too short");
                *field = r.u64(p);
                p += 8;
            };
            if (local || *usize == kSentinel32) take(usize);
            if (local || *csize == kSentinel32) take(csize);
            if (!local && *offset == kSentinel32) take(offset);
        }
        pos += 4 + static_cast<std::uint64_t>(len);
    }
    if (!seen && (*usize == kSentinel32 || *csize == kSentinel32 || (!local && *offset == kSentinel32)))
        r.fail(who + ": size or offset needs a ZIP64 extra field that is missing");
    return seen;
}

std::string quoted(std::string_view name) { return "member '" + std::string(name) + "'"; }

std::uint32_t crc32_of(std::span<const std::uint8_t> data) {
    return static_cast<std::uint32_t>(::crc32_z(::crc32_z(0, nullptr, 0), data.data(), data.size()));
}

// Inflates a member in bounded steps: the output grows (at most doubling, never past the
// recorded size) only as fast as inflated bytes arrive, so a member that records a size far
// beyond what its data holds costs memory for what it holds. Until `head_check` has seen the
// first kZipHeadBytes, the output grows no further than that.
std::vector<std::uint8_t> inflate_raw(const Reader& r, const std::string& who, std::string_view name,
                                      std::span<const std::uint8_t> in, std::uint64_t usize,
                                      const ZipHeadCheck& head_check) {
    constexpr std::uint64_t kFirstStep = std::uint64_t{1} << 16;
    std::vector<std::uint8_t> out;
    std::uint64_t limit = head_check ? std::min<std::uint64_t>(usize, kZipHeadBytes) : usize;
    bool checked = !head_check;
    z_stream z{};
    if (::inflateInit2(&z, -MAX_WBITS) != Z_OK) r.fail(who + ": cannot initialise zlib");
    std::uint64_t in_pos = 0, out_pos = 0;
    std::uint8_t probe[1];  // offered once `out` is full: any byte landing here is one too many
    int ret = Z_OK;
    std::string problem;
    try {
        for (;;) {
            if (!checked && (out_pos == limit || ret == Z_STREAM_END)) {
                head_check(name, std::span<const std::uint8_t>(out.data(), out_pos), usize);
                checked = true;
                limit = usize;
            }
            if (ret == Z_STREAM_END) break;
            if (out_pos == out.size() && out.size() < limit)
                out.resize(std::min<std::uint64_t>(limit, std::max<std::uint64_t>(kFirstStep, 2 * out.size())));
            const std::uint64_t in_chunk = std::min<std::uint64_t>(in.size() - in_pos, UINT_MAX);
            const bool full = out_pos == usize;
            const std::uint64_t out_chunk = full ? 1 : std::min<std::uint64_t>(out.size() - out_pos, UINT_MAX);
            z.next_in = const_cast<Bytef*>(in.data() + in_pos);
            z.avail_in = static_cast<uInt>(in_chunk);
            z.next_out = full ? probe : out.data() + out_pos;
            z.avail_out = static_cast<uInt>(out_chunk);
            ret = ::inflate(&z, Z_NO_FLUSH);
            in_pos += in_chunk - z.avail_in;
            if (full && z.avail_out == 0) {
                problem = "decompressed data is longer than the recorded " + std::to_string(usize) + " bytes";
                break;
            }
            if (!full) out_pos += out_chunk - z.avail_out;
            if (ret == Z_STREAM_END || ret == Z_OK) continue;
            // Z_BUF_ERROR with room left to write means no input is left to make progress.
            if (ret == Z_BUF_ERROR && in_pos == in.size()) {
                problem = "compressed data is truncated";
            } else if (ret == Z_BUF_ERROR && z.avail_out == 0) {
                ret = Z_OK;  // the output step was full: grow it and go on
                continue;
            } else {
                problem = std::string("compressed data is corrupt (") + (z.msg ? z.msg : "zlib error") + ")";
            }
            break;
        }
    } catch (...) {
        ::inflateEnd(&z);
        throw;
    }
    ::inflateEnd(&z);
    if (!problem.empty()) r.fail(who + ": " + problem);
    if (out_pos != usize)
        r.fail(who + ": decompressed to " + std::to_string(out_pos) + " bytes, recorded " + std::to_string(usize));
    if (in_pos != in.size()) r.fail(who + ": unused bytes after the compressed data");
    return out;
}

}  // namespace

std::vector<ZipMember> parse_zip(std::span<const std::uint8_t> bytes, std::string_view source_view,
                                 const ZipHeadCheck& head_check) {
    const std::string source(source_view);
    const Reader r(bytes, source);

    // End of central directory: the last signature whose comment reaches exactly to the end.
    if (bytes.size() < kEndSize) r.fail("not a zip archive (too short; truncated?)");
    std::uint64_t end = 0;
    bool found = false;
    const std::uint64_t lowest = bytes.size() >= kEndSize + 0xFFFF ? bytes.size() - kEndSize - 0xFFFF : 0;
    for (std::uint64_t pos = bytes.size() - kEndSize + 1; pos-- > lowest;) {
        if (r.u32(pos) == kEndSig && pos + kEndSize + r.u16(pos + 20) == bytes.size()) {
            end = pos;
            found = true;
            break;
        }
    }
    if (!found) r.fail("not a zip archive or truncated (no end of central directory record)");
    if (r.u16(end + 4) != 0 || r.u16(end + 6) != 0) r.fail("multi-disk archives are not supported");
    std::uint64_t count = r.u16(end + 10);
    std::uint64_t cd_size = r.u32(end + 12);
    std::uint64_t cd_offset = r.u32(end + 16);
    if (r.u16(end + 8) != count) r.fail("multi-disk archives are not supported");
    std::uint64_t cd_end = end;  // where the central directory must stop

    if (end >= kZip64LocatorSize && r.u32(end - kZip64LocatorSize) == kZip64LocatorSig) {
        const std::uint64_t loc = end - kZip64LocatorSize;
        if (r.u32(loc + 4) != 0 || r.u32(loc + 16) != 1) r.fail("multi-disk archives are not supported");
        const std::uint64_t z64 = r.u64(loc + 8);
        if (z64 > loc || loc - z64 < kZip64EndSize || r.u32(z64) != kZip64EndSig)
            r.fail("corrupt ZIP64 end of central directory locator");
        // The record's own size field counts everything after its first 12 bytes; Python
        // puts the record right before the locator, and so must every archive we accept.
        if (r.u64(z64 + 4) + 12 != loc - z64) r.fail("corrupt ZIP64 end of central directory record");
        if (r.u32(z64 + 16) != 0 || r.u32(z64 + 20) != 0) r.fail("multi-disk archives are not supported");
        const std::uint64_t count64 = r.u64(z64 + 32);
        if (r.u64(z64 + 24) != count64) r.fail("multi-disk archives are not supported");
        const std::uint64_t size64 = r.u64(z64 + 40), offset64 = r.u64(z64 + 48);
        // The 32-bit copies must agree unless they hold the "see ZIP64" sentinel.
        if ((count != kSentinel16 && count != count64) || (cd_size != kSentinel32 && cd_size != size64) ||
            (cd_offset != kSentinel32 && cd_offset != offset64))
            r.fail("end of central directory records disagree");
        count = count64;
        cd_size = size64;
        cd_offset = offset64;
        cd_end = z64;
    } else if (count == kSentinel16 || cd_size == kSentinel32 || cd_offset == kSentinel32) {
        r.fail("ZIP64 end of central directory record is missing");
    }
    if (cd_offset > cd_end || cd_end - cd_offset != cd_size)
        r.fail("central directory size or offset is wrong (truncated, or bytes added before the archive)");
    // Each entry takes at least 46 bytes; this bounds the reservation below.
    if (count > cd_size / kCentralSize)
        r.fail("central directory is too small for " + std::to_string(count) + " members");

    std::vector<Entry> entries;
    entries.reserve(count);
    std::set<std::string> names;
    std::uint64_t pos = cd_offset;
    for (std::uint64_t i = 0; i < count; ++i) {
        if (cd_end - pos < kCentralSize || r.u32(pos) != kCentralSig)
            r.fail("corrupt central directory entry " + std::to_string(i));
        Entry e;
        e.flags = r.u16(pos + 8);
        e.method = r.u16(pos + 10);
        e.crc = r.u32(pos + 16);
        e.csize = r.u32(pos + 20);
        e.usize = r.u32(pos + 24);
        const std::uint64_t name_len = r.u16(pos + 28), extra_len = r.u16(pos + 30), comment_len = r.u16(pos + 32);
        const std::uint16_t disk = r.u16(pos + 34);
        e.offset = r.u32(pos + 42);
        const std::uint64_t total = kCentralSize + name_len + extra_len + comment_len;
        if (cd_end - pos < total) r.fail("corrupt central directory entry " + std::to_string(i));
        e.name = std::string(r.text(pos + kCentralSize, name_len));
        const std::string who = quoted(e.name);
        if (disk != 0 && disk != kSentinel16) r.fail("multi-disk archives are not supported");
        read_zip64_extra(r, pos + kCentralSize + name_len, extra_len, who, &e.usize, &e.csize, &e.offset);
        if (e.name.empty() || e.name.find('\0') != std::string::npos) r.fail("member with an empty or invalid name");
        if (!names.insert(e.name).second) r.fail("duplicate " + who);
        if (e.flags & 0x0041) r.fail(who + " is encrypted");
        if (e.flags & 0x0020) r.fail(who + " uses patched data, which is not supported");
        if (e.method != 0 && e.method != 8)
            r.fail(who + " uses unsupported compression method " + std::to_string(e.method) +
                   " (only stored and deflate)");
        entries.push_back(std::move(e));
        pos += total;
    }
    if (pos != cd_end) r.fail("central directory has " + std::to_string(cd_end - pos) + " unexpected trailing bytes");

    // Local headers: must repeat what the central directory says.
    for (Entry& e : entries) {
        const std::string who = quoted(e.name);
        if (e.offset > cd_offset || cd_offset - e.offset < kLocalSize || r.u32(e.offset) != kLocalSig)
            r.fail(who + ": local header missing or corrupt");
        const std::uint16_t flags = r.u16(e.offset + 6), method = r.u16(e.offset + 8);
        const std::uint32_t crc = r.u32(e.offset + 14);
        std::uint64_t csize = r.u32(e.offset + 18), usize = r.u32(e.offset + 22);
        const std::uint64_t name_len = r.u16(e.offset + 26), extra_len = r.u16(e.offset + 28);
        if (r.text(e.offset + kLocalSize, name_len) != e.name) r.fail(who + ": local header name differs");
        if (method != e.method) r.fail(who + ": local header compression method differs");
        if ((flags & 0x0008) != (e.flags & 0x0008)) r.fail(who + ": local header flags differ");
        if (!(flags & 0x0008)) {  // without a data descriptor the local header holds crc and sizes
            std::uint64_t u64 = usize, c64 = csize;
            read_zip64_extra(r, e.offset + kLocalSize + name_len, extra_len, who, &u64, &c64, nullptr);
            if (crc != e.crc || (usize != kSentinel32 && usize != e.usize) ||
                (csize != kSentinel32 && csize != e.csize) || u64 != e.usize || c64 != e.csize)
                r.fail(who + ": local header disagrees with the central directory");
        }
        e.data_start = e.offset + kLocalSize + name_len + extra_len;
        if (e.data_start > cd_offset || cd_offset - e.data_start < e.csize)
            r.fail(who + ": data runs into the central directory (truncated or corrupt sizes)");
    }
    // Members may not share bytes: overlapping entries are a known way to hide data.
    std::vector<const Entry*> by_offset;
    for (const Entry& e : entries) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i - 1]->data_start + by_offset[i - 1]->csize > by_offset[i]->offset)
            r.fail(quoted(by_offset[i]->name) + " overlaps another member");

    std::vector<ZipMember> members;
    members.reserve(entries.size());
    for (const Entry& e : entries) {
        const std::string who = quoted(e.name);
        const std::span<const std::uint8_t> raw = r.span(e.data_start, e.csize);
        ZipMember m{e.name, {}};
        if (e.method == 0) {
            if (e.csize != e.usize) r.fail(who + ": stored sizes differ");
            m.data.assign(raw.begin(), raw.end());
        } else {
            if (e.usize > e.csize * kMaxDeflateRatio + 1024)
                r.fail(who + ": recorded size " + std::to_string(e.usize) + " is impossible for its compressed size");
            m.data = inflate_raw(r, who, e.name, raw, e.usize, head_check);
        }
        const std::uint32_t crc = crc32_of(m.data);
        if (crc != e.crc) r.fail(who + ": CRC-32 mismatch (data is corrupt)");
        members.push_back(std::move(m));
    }
    return members;
}

namespace {

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
        w.u16(e.flags);
        w.u16(method);
        w.u16(kDosTime);
        w.u16(kDosDate);
        w.u32(e.crc);
        w.u32(e.zip64 ? kSentinel32 : e.csize);
        w.u32(e.zip64 ? kSentinel32 : e.usize);
        w.u16(m.name.size());
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
        w.u16(e.flags);
        w.u16(method);
        w.u16(kDosTime);
        w.u16(kDosDate);
        w.u32(e.crc);
        w.u32(e.zip64 ? kSentinel32 : e.csize);
        w.u32(e.zip64 ? kSentinel32 : e.usize);
        w.u16(e.name.size());
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
