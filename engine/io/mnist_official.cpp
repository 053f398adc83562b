#include "engine/io/mnist_official.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/io/md5.hpp"
#include "engine/io/sha256.hpp"

namespace revgraph::io {

const char* official_mnist_gzip_md5(MnistFile which) {
    // As published beside train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz.
    return which == MnistFile::train_images ? "f68b3c2dcbeaaa9fbdd348bbdeb94873" : "d53e105ee54ea40749a09fcbcd1e9432";
}

IdxFileCheck check_official_mnist(const std::filesystem::path& path, MnistFile which) {
    const std::vector<std::uint8_t> bytes = read_file(path);
    IdxFileCheck c;
    c.path = path.string();
    c.md5 = md5_hex(bytes);
    c.sha256 = sha256_hex(bytes);
    c.compressed = bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
    const std::string official = official_mnist_gzip_md5(which);
    if (!c.compressed) {
        // The published sums are of the gzip files, and no sum of the decompressed content is
        // published with them: a raw file cannot be vouched for.
        c.reason = "uncompressed files cannot be checked against the gzip md5s";
    } else if (c.md5 != official) {
        c.reason = "md5 " + c.md5 + " is not the official " + official;
    } else {
        c.official = true;
    }
    return c;
}

nlohmann::ordered_json IdxFileCheck::to_json() const {
    nlohmann::ordered_json j;
    j["path"] = path;
    j["md5"] = md5;
    j["sha256"] = sha256;
    j["official"] = official;
    if (!official) j["reason"] = reason;
    return j;
}

}  // namespace revgraph::io
