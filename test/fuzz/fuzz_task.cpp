// libFuzzer target: task inputs (the three arrays, their dtypes, shapes, pixels and labels).
// Raw archive bytes rarely keep valid CRCs under mutation, so this target builds the archive
// itself: the input is [flags][len0 u32][len1 u32] then three .npy members back to back (the
// last takes the rest); flags bit 0 picks deflate, bits 1-2 rename or drop a member. The CRCs
// are right by construction, so the fuzzer reaches the pixel and label checks behind them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/error.hpp"
#include "engine/task_files.hpp"
#include "engine/io/zip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 9) return 0;
    const std::uint8_t flags = data[0];
    auto u32 = [&](std::size_t at) {
        return std::size_t{data[at]} | std::size_t{data[at + 1]} << 8 | std::size_t{data[at + 2]} << 16 |
               std::size_t{data[at + 3]} << 24;
    };
    std::size_t lens[2] = {u32(1), u32(5)};
    std::size_t pos = 9;
    std::vector<std::span<const std::uint8_t>> parts;
    for (const std::size_t len : lens) {
        const std::size_t take = std::min(len, size - pos);
        parts.emplace_back(data + pos, take);
        pos += take;
    }
    parts.emplace_back(data + pos, size - pos);
    const std::string_view names[] = {"train_images.npy", (flags & 2) ? "test_labels.npy" : "train_labels.npy",
                                      "test_images.npy"};
    std::vector<revgraph::io::ZipInput> members;
    for (std::size_t i = 0; i < 3; ++i)
        if (!((flags & 4) && i == 2)) members.push_back({names[i], parts[i]});
    const auto archive = revgraph::io::build_zip(members, {.deflate = (flags & 1) != 0});
    try {
        const auto in = revgraph::task_inputs_from_archive(revgraph::io::parse_npz(archive, "fuzz.npz"), "fuzz.npz");
        // Accepted inputs are valid by the engine's own rules.
        in.validate();
    } catch (const revgraph::Error&) {}
    return 0;
}
