#pragma once
// MNIST IDX files (docs/spec.md §9): images (magic 2051, N x 28 x 28 unsigned bytes) and labels
// (magic 2049, N bytes in 0..9), big-endian headers, optionally gzip-compressed (.gz as
// distributed; detected by content, not by name).
//
// A file is read once, straight into where it stays: a raw file into the final pixel buffer (sized
// from the IDX header), a gzip file into one buffer that is inflated straight into the final pixel
// buffer, its content hashed slice by slice as it is produced. The stored bytes' md5 runs on a
// second thread beside their sha256 and the inflate. Whether the file is official MNIST
// (mnist_official.hpp) then needs no second read.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace revgraph::io {

constexpr int kMnistSide = 28;

// What was read from one IDX file, for telling whether it is official content.
struct IdxFileDigests {
    std::string path;
    bool compressed = false;          // gzip by content
    std::uint64_t stored_bytes = 0;   // the file as stored (gzip or raw)
    std::string md5, sha256;          // of the stored bytes
    std::uint64_t content_bytes = 0;  // the IDX content: decompressed, or the raw file itself
    std::string content_sha256;       // equals sha256 for a raw file
};

struct IdxImages {
    std::int64_t count = 0;
    std::vector<std::uint8_t> pixels;  // count x 28 x 28, row-major
    IdxFileDigests digests;            // filled by read_idx_images (from a file) only
};

// `source` names the file in error messages. Input may be raw IDX or gzip.
IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source);
std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source);

IdxImages read_idx_images(const std::filesystem::path& path);
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path);

struct IdxLabels {
    std::vector<std::uint8_t> labels;
    IdxFileDigests digests;
};
// As read_idx_labels, with the file's digests.
IdxLabels read_idx_labels_with_digests(const std::filesystem::path& path);

// One training set, read once; images.digests and labels_digests describe the two files. Immutable
// once read, so that threads may share it.
struct MnistSet {
    IdxImages images;
    std::vector<std::uint8_t> labels;
    IdxFileDigests labels_digests;
};
// Both files of one set; throws Error when their counts differ.
MnistSet read_mnist(const std::filesystem::path& images, const std::filesystem::path& labels);

// Far above MNIST's 47 MB: a bound that stops a corrupt or hostile .gz from eating memory.
constexpr std::uint64_t kMaxGunzipBytes = std::uint64_t{1} << 30;

// Decompresses a whole gzip file (all members); throws Error "<source>: ..." on corruption or
// when the result would exceed `max_bytes` (memory stays within the cap, never twice it).
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> bytes, std::string_view source,
                                 std::uint64_t max_bytes = kMaxGunzipBytes);

}  // namespace revgraph::io
