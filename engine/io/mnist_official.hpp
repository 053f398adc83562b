#pragma once
// Whether IDX files are the official MNIST training files, by content. A raw IDX file is official
// when its SHA-256 is the official raw file's; a gzip file when its MD5 is the published one of the
// distributed .gz, or when what it decompresses to has the official raw file's SHA-256 (a
// re-compressed official file is official content). Each check records the rule that matched. A
// draw or a qualification from other files is still computed, but must never read as official.
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/io/idx.hpp"

namespace revgraph::io {

enum class MnistFile { train_images, train_labels };

// The official file's published facts.
struct OfficialMnistFile {
    const char* gzip_md5;         // of the distributed .gz, as published beside it
    const char* raw_sha256;       // of its decompressed content, the raw IDX file
    std::uint64_t raw_bytes = 0;  // the raw IDX file's size
};
const OfficialMnistFile& official_mnist_file(MnistFile which);

struct IdxFileCheck {
    std::string path;
    std::uint64_t bytes = 0;               // as stored
    std::string md5, sha256;               // of the file's bytes as stored (gzip or raw)
    bool compressed = false;               // gzip by content, as read_idx_* decide
    std::uint64_t decompressed_bytes = 0;  // gzip only
    std::string decompressed_sha256;       // gzip only
    bool official = false;
    // How it was recognised: "raw_sha256" (a raw file's sha256), "gzip_md5" (the distributed .gz by
    // its md5, its content checked too), "decompressed_sha256" (any gzip of the official content);
    // "" when not official.
    std::string rule;
    std::string reason;  // why not official; "" when official

    // {"path", "bytes", "md5", "sha256", "compressed", ["decompressed_bytes", "decompressed_sha256"
    // (gzip only)], "official", "rule" (when official) or "reason" (when not)}
    nlohmann::ordered_json to_json() const;
};

// The rule applied to a file's digests, as read_idx_* computed them (no file is read).
IdxFileCheck check_official_mnist(const IdxFileDigests& digests, MnistFile which);

// Reads `path` (as an IDX file of that kind) and checks it.
IdxFileCheck check_official_mnist(const std::filesystem::path& path, MnistFile which);

}  // namespace revgraph::io
