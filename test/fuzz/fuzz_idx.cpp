// libFuzzer target: MNIST IDX images and labels as raw bytes, and the same bytes as a gzip file.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/error.hpp"
#include "engine/io/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    try {
        revgraph::io::parse_idx_images(bytes, "fuzz-images");
    } catch (const revgraph::Error&) {}
    try {
        revgraph::io::parse_idx_labels(bytes, "fuzz-labels");
    } catch (const revgraph::Error&) {}
    try {  // a small cap: a bomb is found without using the real cap's gigabyte
        revgraph::io::gunzip(bytes, "fuzz.gz", std::uint64_t{1} << 24);
    } catch (const revgraph::Error&) {}
    return 0;
}
