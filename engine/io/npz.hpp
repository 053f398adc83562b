#pragma once
// .npz archives as np.savez (stored) and np.savez_compressed (deflate) write them: a zip of
// "<name>.npy" members. Names here are without the ".npy" suffix, in archive order.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/io/npy.hpp"

namespace revgraph::io {

class NpzArchive {
public:
    // Throws Error for an empty name or one already present.
    void add(std::string name, Array array);
    const Array* find(std::string_view name) const;  // nullptr when absent
    const Array& at(std::string_view name) const;    // throws Error naming the missing array
    bool contains(std::string_view name) const { return find(name) != nullptr; }
    std::vector<std::string> names() const;
    const std::vector<std::pair<std::string, Array>>& entries() const { return entries_; }
    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    bool operator==(const NpzArchive&) const = default;

private:
    std::vector<std::pair<std::string, Array>> entries_;
};

// `source` names the archive in error messages. Every member must be a ".npy" array.
NpzArchive parse_npz(std::span<const std::uint8_t> bytes, std::string_view source);
NpzArchive read_npz(const std::filesystem::path& path);

enum class Compression { stored, deflate };

struct NpzOptions {
    Compression compression = Compression::stored;
    bool force_zip64 = false;  // ZIP64 records even when not needed (to test readers)
};

std::vector<std::uint8_t> serialize_npz(const NpzArchive& archive, const NpzOptions& options = {});
void write_npz(const std::filesystem::path& path, const NpzArchive& archive, const NpzOptions& options = {});  // atomic

}  // namespace revgraph::io
