#pragma once
// The subset of the ZIP format that np.savez / np.savez_compressed (Python's zipfile) write:
// one disk, members stored (method 0) or raw-deflated (method 8), ZIP64 extra fields and end
// records. Reading (zip_read.cpp, over libzip) verifies everything it can (structure, local
// headers against the central directory, sizes, CRC-32, names); writing (zip_write.cpp, our own)
// is deterministic (fixed 1980-01-01 timestamps) so equal inputs give byte-equal archives.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace revgraph::io {

struct ZipMember {
    std::string name;
    std::vector<std::uint8_t> data;  // uncompressed
};

// Called for each deflated member with its first bytes (up to kZipHeadBytes, or all of it when
// shorter) and the uncompressed size the archive records, before anything more is inflated; it
// throws Error when the member's own header (a .npy header) declares another size. Together
// with inflating in bounded steps, this keeps memory proportional to what the data really holds
// and what its headers declare, not to a size field a hostile archive can set at will.
using ZipHeadCheck = std::function<void(std::string_view name, std::span<const std::uint8_t> head, std::uint64_t size)>;
constexpr std::size_t kZipHeadBytes = std::size_t{1} << 16;

// All members in central-directory order; throws Error "<source>: <what is wrong>".
std::vector<ZipMember> parse_zip(std::span<const std::uint8_t> bytes, std::string_view source,
                                 const ZipHeadCheck& head_check = {});

struct ZipInput {
    std::string_view name;
    std::span<const std::uint8_t> data;
};

struct ZipOptions {
    bool deflate = false;      // method 8 (zlib level 6, as Python's zipfile) instead of 0
    bool force_zip64 = false;  // ZIP64 fields and end records even for small archives (tests)
};

std::vector<std::uint8_t> build_zip(std::span<const ZipInput> members, const ZipOptions& options);

}  // namespace revgraph::io
