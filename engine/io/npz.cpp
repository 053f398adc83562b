#include "engine/io/npz.hpp"

#include <algorithm>

#include "engine/io/atomic_file.hpp"
#include "engine/io/zip.hpp"

namespace revgraph::io {

namespace {
constexpr std::string_view kSuffix = ".npy";
}

void NpzArchive::add(std::string name, Array array) {
    if (name.empty()) throw Error("an npz array needs a non-empty name");
    if (contains(name)) throw Error("npz array '" + name + "' added twice");
    entries_.emplace_back(std::move(name), std::move(array));
}

const Array* NpzArchive::find(std::string_view name) const {
    const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
    return it == entries_.end() ? nullptr : &it->second;
}

const Array& NpzArchive::at(std::string_view name) const {
    if (const Array* a = find(name)) return *a;
    std::string have;
    for (const auto& e : entries_) have += (have.empty() ? "" : ", ") + e.first;
    throw Error("no array '" + std::string(name) + "' in the archive (it has: " + (have.empty() ? "nothing" : have) +
                ")");
}

std::vector<std::string> NpzArchive::names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.first);
    return out;
}

NpzArchive parse_npz(std::span<const std::uint8_t> bytes, std::string_view source) {
    const std::string where(source);
    NpzArchive archive;
    // Each member's .npy header is checked against the size the archive records before the
    // rest is inflated, so memory follows what the headers declare (and the data holds).
    const auto head_check = [&](std::string_view name, std::span<const std::uint8_t> head, std::uint64_t size) {
        if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return;  // refused below, by name
        check_npy_head(head, size, where + ":" + std::string(name));
    };
    for (ZipMember& m : parse_zip(bytes, source, head_check)) {
        // np.load would hand back other members as raw bytes; nothing in revgraph wants those.
        if (m.name.size() <= kSuffix.size() || !m.name.ends_with(kSuffix))
            throw Error(where + ": member '" + m.name + "' is not a .npy array");
        archive.add(m.name.substr(0, m.name.size() - kSuffix.size()), parse_npy(m.data, where + ":" + m.name));
    }
    return archive;
}

NpzArchive read_npz(const std::filesystem::path& path) { return parse_npz(read_file(path), path.string()); }

std::vector<std::uint8_t> serialize_npz(const NpzArchive& archive, const NpzOptions& options) {
    std::vector<std::string> names;
    std::vector<std::vector<std::uint8_t>> files;
    for (const auto& [name, array] : archive.entries()) {
        names.push_back(name + std::string(kSuffix));
        files.push_back(serialize_npy(array));
    }
    std::vector<ZipInput> inputs;
    for (std::size_t i = 0; i < names.size(); ++i) inputs.push_back({names[i], files[i]});
    return build_zip(inputs, {options.compression == Compression::deflate, options.force_zip64});
}

void write_npz(const std::filesystem::path& path, const NpzArchive& archive, const NpzOptions& options) {
    write_file_atomic(path, serialize_npz(archive, options));
}

}  // namespace revgraph::io
