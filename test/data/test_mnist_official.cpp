// The official-MNIST rules (engine/io/mnist_official.hpp) on injected digests: the published sums
// are those of issue 24 / docs/results.md, typed here independently of the engine's table. The
// same rules on the real files: check_real_mnist.py.
#include <doctest/doctest.h>

#include <string>

#include "engine/io/mnist_official.hpp"

using revgraph::io::check_official_mnist;
using revgraph::io::IdxFileDigests;
using revgraph::io::MnistFile;

namespace {

constexpr const char* kImagesGzMd5 = "f68b3c2dcbeaaa9fbdd348bbdeb94873";
constexpr const char* kImagesRawSha = "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db";
constexpr const char* kLabelsGzMd5 = "d53e105ee54ea40749a09fcbcd1e9432";
constexpr const char* kLabelsRawSha = "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5";
constexpr std::uint64_t kImagesRawBytes = 47040016, kLabelsRawBytes = 60008;
constexpr const char* kOtherSha = "0000000000000000000000000000000000000000000000000000000000000001";
constexpr const char* kOtherMd5 = "00000000000000000000000000000001";

IdxFileDigests raw(const std::string& sha256, std::uint64_t bytes) {
    IdxFileDigests d;
    d.path = "raw";
    d.stored_bytes = d.content_bytes = bytes;
    d.md5 = kOtherMd5;
    d.sha256 = d.content_sha256 = sha256;
    return d;
}

IdxFileDigests gz(const std::string& md5, const std::string& content_sha256, std::uint64_t content_bytes) {
    IdxFileDigests d;
    d.path = "x.gz";
    d.compressed = true;
    d.stored_bytes = 9912422;
    d.md5 = md5;
    d.sha256 = kOtherSha;
    d.content_bytes = content_bytes;
    d.content_sha256 = content_sha256;
    return d;
}

}  // namespace

TEST_CASE("official mnist: a raw file by its sha256") {
    auto c = check_official_mnist(raw(kImagesRawSha, kImagesRawBytes), MnistFile::train_images);
    CHECK(c.official);
    CHECK(c.rule == "raw_sha256");
    CHECK(c.reason.empty());
    CHECK(c.to_json()["rule"] == "raw_sha256");
    CHECK(c.to_json()["bytes"] == kImagesRawBytes);
    CHECK_FALSE(c.to_json().contains("reason"));
    CHECK(check_official_mnist(raw(kLabelsRawSha, kLabelsRawBytes), MnistFile::train_labels).rule == "raw_sha256");
    // The labels' sum does not make an images file official (nor the other way round).
    CHECK_FALSE(check_official_mnist(raw(kLabelsRawSha, kLabelsRawBytes), MnistFile::train_images).official);
    CHECK_FALSE(check_official_mnist(raw(kImagesRawSha, kImagesRawBytes), MnistFile::train_labels).official);
    // A one-byte change changes the sha256: not official, and the report says why.
    c = check_official_mnist(raw(kOtherSha, kImagesRawBytes), MnistFile::train_images);
    CHECK_FALSE(c.official);
    CHECK(c.rule.empty());
    CHECK(c.reason == std::string("sha256 ") + kOtherSha + " is not the official raw file's " + kImagesRawSha);
    CHECK(c.to_json()["official"] == false);
    CHECK_FALSE(c.to_json().contains("rule"));
    // The md5 of a gzip is no rule for a raw file.
    IdxFileDigests d = raw(kOtherSha, kImagesRawBytes);
    d.md5 = kImagesGzMd5;
    CHECK_FALSE(check_official_mnist(d, MnistFile::train_images).official);
}

TEST_CASE("official mnist: a gzip file by its md5, or by what it decompresses to") {
    // The distributed .gz: its md5, and its content is the official content.
    auto c = check_official_mnist(gz(kImagesGzMd5, kImagesRawSha, kImagesRawBytes), MnistFile::train_images);
    CHECK(c.official);
    CHECK(c.rule == "gzip_md5");
    CHECK(c.to_json()["decompressed_sha256"] == kImagesRawSha);
    CHECK(c.to_json()["compressed"] == true);
    CHECK(check_official_mnist(gz(kLabelsGzMd5, kLabelsRawSha, kLabelsRawBytes), MnistFile::train_labels).rule ==
          "gzip_md5");
    // Re-compressed (another md5): official content all the same.
    c = check_official_mnist(gz(kOtherMd5, kImagesRawSha, kImagesRawBytes), MnistFile::train_images);
    CHECK(c.official);
    CHECK(c.rule == "decompressed_sha256");
    // Other content under any md5 is not official; the official md5 over other content is a
    // collision, not the file.
    c = check_official_mnist(gz(kOtherMd5, kOtherSha, kImagesRawBytes), MnistFile::train_images);
    CHECK_FALSE(c.official);
    CHECK(c.reason.find(kImagesGzMd5) != std::string::npos);
    CHECK(c.reason.find(kOtherSha) != std::string::npos);
    c = check_official_mnist(gz(kImagesGzMd5, kOtherSha, kImagesRawBytes), MnistFile::train_images);
    CHECK_FALSE(c.official);
    CHECK(c.reason.find("is the official gzip's") != std::string::npos);
    // The right sum with the wrong size cannot be the file.
    CHECK_FALSE(
        check_official_mnist(gz(kOtherMd5, kImagesRawSha, kImagesRawBytes - 1), MnistFile::train_images).official);
}
