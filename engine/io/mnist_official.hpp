#pragma once
// Whether IDX files are the official MNIST training files: their MD5 against the sums published
// with the distribution (which are of the gzip files), with SHA-256 recorded beside it. A draw or
// a qualification from other files is still computed, but must never read as the official one.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace revgraph::io {

enum class MnistFile { train_images, train_labels };

struct IdxFileCheck {
    std::string path;
    std::string md5, sha256;  // of the file's bytes as stored (gzip or raw)
    bool compressed = false;  // gzip by content, as read_idx_* decide
    bool official = false;
    std::string reason;  // why not official; "" when official

    // {"path", "md5", "sha256", "official", "reason" (only when not official)}
    nlohmann::ordered_json to_json() const;
};

// The published MD5 of the gzip file ("f68b3c2d..." for the training images).
const char* official_mnist_gzip_md5(MnistFile which);

// Reads `path` and compares it with the official file `which`.
IdxFileCheck check_official_mnist(const std::filesystem::path& path, MnistFile which);

}  // namespace revgraph::io
