// The zip reader behind parse_npz, over libzip: libzip finds the end records (ZIP64 included),
// reads the central directory and, opened with ZIP_CHECKCONS, compares every local header with
// its central entry (name, method, CRC-32, sizes) and refuses trailing bytes; it inflates and
// checks each member's CRC-32 and size as it is read. What stays here is revgraph's policy:
// stored and deflate only (Debian's libzip would also read bzip2 and others), no encryption,
// unique names, a recorded size deflate could really produce, and reading in bounded steps so
// memory follows the data, not a size field.
#include <zip.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "engine/error.hpp"
#include "engine/io/zip.hpp"

namespace revgraph::io {

namespace {

constexpr std::size_t kEndSize = 22;  // the end of central directory record, without a comment
// Deflate cannot expand data by more than about 1032:1, so a recorded size beyond that is a
// corrupt header and must not drive an allocation.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kFirstStep = std::uint64_t{1} << 16;

struct Discard {
    void operator()(zip_t* za) const { zip_discard(za); }
};
struct Close {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Archive = std::unique_ptr<zip_t, Discard>;
using Member = std::unique_ptr<zip_file_t, Close>;

std::string member_label(std::string_view name) { return "member '" + std::string(name) + "'"; }

// What an error libzip reports while opening means for an archive held in memory.
std::string open_problem(int code, zip_error_t* error) {
    switch (code) {
        case ZIP_ER_NOZIP:
            return "not a zip archive, or a truncated or corrupt one (no usable end record, central directory "
                   "or local header)";
        case ZIP_ER_INCONS:
            return "inconsistent archive: the end record, the central directory and the local headers disagree "
                   "(truncated, corrupt, or bytes added)";
        case ZIP_ER_MULTIDISK: return "multi-disk archives are not supported";
        case ZIP_ER_MEMORY: return "out of memory reading the archive";
        default: return std::string("cannot read the archive (libzip: ") + zip_error_strerror(error) + ")";
    }
}

// Opens `bytes` in place (libzip reads the caller's buffer, no copy); throws Error with libzip's
// reason. With `strict` (ZIP_CHECKCONS) libzip also refuses duplicate names, as ZIP_ER_EXISTS.
Archive open_archive(std::span<const std::uint8_t> bytes, bool strict, const std::string& source, int* code) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
    if (src == nullptr) {
        zip_error_fini(&error);
        throw Error(source + ": out of memory reading the archive");
    }
    zip_t* za = zip_open_from_source(src, ZIP_RDONLY | (strict ? ZIP_CHECKCONS : 0), &error);
    *code = zip_error_code_zip(&error);
    if (za == nullptr) {
        zip_source_free(src);  // not taken over by a failed open
        const std::string problem = open_problem(*code, &error);
        zip_error_fini(&error);
        if (*code == ZIP_ER_EXISTS) return nullptr;  // the caller names the duplicate
        throw Error(source + ": " + problem);
    }
    zip_error_fini(&error);
    return Archive(za);
}

// The name used twice, for the message: the archive opened again without the check that refused it.
std::string duplicate_name(std::span<const std::uint8_t> bytes, const std::string& source) {
    int code = 0;
    const Archive za = open_archive(bytes, false, source, &code);
    std::set<std::string> seen;
    const zip_int64_t n = zip_get_num_entries(za.get(), 0);
    for (zip_int64_t i = 0; i < n; ++i) {
        const char* name = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
        if (name != nullptr && !seen.insert(name).second) return name;
    }
    return "?";
}

// Reads a member in bounded steps: the output grows (at most doubling, never past the recorded
// size) only as fast as libzip hands out bytes, so a member that records a size far beyond what
// its data holds costs memory for what it holds. Until `head_check` has seen the first
// kZipHeadBytes, the output grows no further than that. A last one-byte read past the recorded
// size lets libzip check the CRC-32 and size at the end of the data, and shows data that is longer.
std::vector<std::uint8_t> read_member(zip_file_t* file, const std::string& who, std::string_view name,
                                      std::uint64_t usize, const ZipHeadCheck& head_check) {
    std::vector<std::uint8_t> out;
    std::uint64_t limit = head_check ? std::min<std::uint64_t>(usize, kZipHeadBytes) : usize;
    bool checked = !head_check;
    std::uint64_t filled = 0;
    for (;;) {
        if (!checked && filled == limit) {
            head_check(name, std::span<const std::uint8_t>(out.data(), filled), usize);
            checked = true;
            limit = usize;
        }
        if (filled == out.size() && out.size() < limit)
            out.resize(std::min<std::uint64_t>(limit, std::max<std::uint64_t>(kFirstStep, 2 * out.size())));
        std::uint8_t probe = 0;
        const bool full = filled == usize;
        const zip_int64_t got =
            full ? zip_fread(file, &probe, 1) : zip_fread(file, out.data() + filled, out.size() - filled);
        if (got < 0) {
            const int code = zip_error_code_zip(zip_file_get_error(file));
            if (code == ZIP_ER_CRC) throw Error(who + ": CRC-32 mismatch (data is corrupt)");
            if (filled != usize && (code == ZIP_ER_INCONS || code == ZIP_ER_EOF))
                throw Error(who + ": decompressed to " + std::to_string(filled) + " bytes, recorded " +
                            std::to_string(usize));
            if (code == ZIP_ER_ZLIB || code == ZIP_ER_COMPRESSED_DATA || code == ZIP_ER_EOF)
                throw Error(who + ": compressed data is corrupt or truncated");
            throw Error(who + ": cannot read (libzip: " + zip_file_strerror(file) + ")");
        }
        if (got == 0) break;  // the end, checked by libzip
        if (full)
            throw Error(who + ": decompressed data is longer than the recorded " + std::to_string(usize) + " bytes");
        filled += static_cast<std::uint64_t>(got);
    }
    if (!checked) head_check(name, std::span<const std::uint8_t>(out.data(), filled), usize);
    if (filled != usize)
        throw Error(who + ": decompressed to " + std::to_string(filled) + " bytes, recorded " + std::to_string(usize));
    return out;
}

}  // namespace

std::vector<ZipMember> parse_zip(std::span<const std::uint8_t> bytes, std::string_view source_view,
                                 const ZipHeadCheck& head_check) {
    const std::string source(source_view);
    // libzip reads an empty buffer as an empty archive; an archive has at least its end record.
    if (bytes.size() < kEndSize) throw Error(source + ": not a zip archive (too short; truncated?)");
    int code = 0;
    const Archive za = open_archive(bytes, true, source, &code);
    if (!za) throw Error(source + ": duplicate " + member_label(duplicate_name(bytes, source)));

    const zip_int64_t count = zip_get_num_entries(za.get(), 0);
    std::vector<ZipMember> members;
    // A bound on the members' compressed sizes, not an interval check: overlapping entries are how
    // a small archive makes a huge one (each member within the deflate ratio, the sum not), and
    // libzip neither looks nor tells the members' data offsets. Members that lie apart hold at most
    // the archive's bytes between them, so a sum above the archive's size means some share bytes.
    std::uint64_t compressed_total = 0;
    for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(count); ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        const char* raw_name = zip_get_name(za.get(), i, ZIP_FL_ENC_RAW);
        if (raw_name == nullptr || zip_stat_index(za.get(), i, ZIP_FL_ENC_RAW, &st) != 0)
            throw Error(source + ": corrupt central directory entry " + std::to_string(i));
        const std::uint64_t need =
            ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD;
        if ((st.valid & need) != need) throw Error(source + ": corrupt central directory entry " + std::to_string(i));
        const std::string name(raw_name);
        const std::string who = source + ": " + member_label(name);
        if (name.empty()) throw Error(source + ": member with an empty or invalid name");
        if (st.encryption_method != ZIP_EM_NONE) throw Error(who + " is encrypted");
        if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
            throw Error(who + " uses unsupported compression method " + std::to_string(st.comp_method) +
                        " (only stored and deflate)");
        compressed_total += st.comp_size;
        if (compressed_total > bytes.size())
            throw Error(who + ": the members' compressed sizes add up to more than the archive's " +
                        std::to_string(bytes.size()) + " bytes (members share bytes)");
        if (st.comp_method == ZIP_CM_STORE && st.comp_size != st.size) throw Error(who + ": stored sizes differ");
        if (st.comp_method == ZIP_CM_DEFLATE && st.size > st.comp_size * kMaxDeflateRatio + 1024)
            throw Error(who + ": recorded size " + std::to_string(st.size) + " is impossible for its compressed size");
        const Member file(zip_fopen_index(za.get(), i, 0));
        if (!file) throw Error(who + ": cannot read (libzip: " + zip_strerror(za.get()) + ")");
        // A stored member's recorded size is bytes the archive holds (libzip checks the member lies
        // before the central directory); only deflated ones, whose recorded size could drive an
        // inflation far past the archive, go through the head check.
        const ZipHeadCheck none;
        members.push_back(
            {name, read_member(file.get(), who, name, st.size, st.comp_method == ZIP_CM_DEFLATE ? head_check : none)});
    }
    return members;
}

}  // namespace revgraph::io
