// libFuzzer target: the zip and npz readers on raw archive bytes (structure, ZIP64, deflate, CRC).
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/error.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/zip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    try {
        revgraph::io::parse_zip(bytes, "fuzz.zip");
    } catch (const revgraph::Error&) {}
    try {
        const auto archive = revgraph::io::parse_npz(bytes, "fuzz.npz");
        if (revgraph::io::parse_npz(revgraph::io::serialize_npz(archive), "again.npz") != archive) __builtin_trap();
    } catch (const revgraph::Error&) {}
    return 0;
}
