// Writes .npy/.npz files with revgraph's writers into the directory given as argv[1], for
// check_with_numpy.py to read back with numpy. The values follow the formulas of that script.
#include <cstdio>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/npz.hpp"

using namespace revgraph::io;

namespace {

template <typename T>
std::vector<T> ramp(std::size_t n) {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: write_samples DIR\n");
        return 2;
    }
    try {
        const std::filesystem::path dir = argv[1];
        write_npy(dir / "f4_2x3.npy", Array::from<float>({2, 3}, ramp<float>(6)));
        write_npy(dir / "f8_scalar.npy", Array::from<double>({}, std::vector<double>{-2.5}));
        write_npy(dir / "i8_5.npy", Array::from<std::int64_t>({5}, ramp<std::int64_t>(5)));
        write_npy(dir / "i4_2x2x2.npy", Array::from<std::int32_t>({2, 2, 2}, ramp<std::int32_t>(8)));
        write_npy(dir / "u1_3x4.npy", Array::from<std::uint8_t>({3, 4}, ramp<std::uint8_t>(12)));
        write_npy(dir / "f4_empty.npy", Array::from<float>({2, 0, 3}, std::vector<float>{}));

        NpzArchive a;
        a.add("train_images", Array::from<float>({4, 1, 9, 9}, ramp<float>(4 * 81)));
        a.add("train_labels", Array::from<std::int64_t>({4}, ramp<std::int64_t>(4)));
        std::vector<std::int64_t> big(10000);
        for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::int64_t>(i % 7);
        a.add("big", Array::from<std::int64_t>({10000}, big));
        a.add("scalar", Array::from<double>({}, std::vector<double>{3.5}));
        a.add("empty", Array::from<std::uint8_t>({0}, std::vector<std::uint8_t>{}));
        write_npz(dir / "stored.npz", a, {Compression::stored, false});
        write_npz(dir / "deflate.npz", a, {Compression::deflate, false});
        write_npz(dir / "stored_zip64.npz", a, {Compression::stored, true});
        write_npz(dir / "deflate_zip64.npz", a, {Compression::deflate, true});

        // Over a MiB in all: its members are deflated side by side on threads (engine/io/deflate.hpp).
        NpzArchive t;
        std::vector<float> wave(300000), steps(300000);
        for (std::size_t i = 0; i < wave.size(); ++i) {
            wave[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
            steps[i] = static_cast<float>(i / 1000);
        }
        t.add("wave", Array::from<float>({300000}, wave));
        t.add("labels", Array::from<std::int64_t>({10000}, big));
        t.add("steps", Array::from<float>({300000}, steps));
        write_npz(dir / "threaded.npz", t, {Compression::deflate, false});
    } catch (const revgraph::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
