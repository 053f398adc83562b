#pragma once
// MNIST IDX files (docs/spec.md §9): images (magic 2051, N x 28 x 28 unsigned bytes) and labels
// (magic 2049, N bytes in 0..9), big-endian headers, optionally gzip-compressed (.gz as
// distributed; detected by content, not by name).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace revgraph::io {

constexpr int kMnistSide = 28;

struct IdxImages {
    std::int64_t count = 0;
    std::vector<std::uint8_t> pixels;  // count x 28 x 28, row-major
};

// `source` names the file in error messages. Input may be raw IDX or gzip.
IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source);
std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source);

IdxImages read_idx_images(const std::filesystem::path& path);
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path);

struct MnistSet {
    IdxImages images;
    std::vector<std::uint8_t> labels;
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
