// libFuzzer target: the .npy reader (every header and payload numpy could or could not write).
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/error.hpp"
#include "engine/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    try {
        const auto a = revgraph::io::parse_npy(bytes, "fuzz.npy");
        // What was accepted must survive a write and a read unchanged.
        if (revgraph::io::parse_npy(revgraph::io::serialize_npy(a), "again.npy") != a) __builtin_trap();
    } catch (const revgraph::Error&) {}
    try {  // the prefix check the npz reader runs before inflating a member
        revgraph::io::check_npy_head(bytes.first(size / 2), size, "fuzz.npy");
    } catch (const revgraph::Error&) {}
    return 0;
}
