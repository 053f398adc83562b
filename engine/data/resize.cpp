#include "engine/data/resize.hpp"

#include <array>
#include <cstddef>
#include <string>

#include "engine/error.hpp"

namespace revgraph::data {
namespace {

// The non-zero weights of one output cell: input pixels first .. first+count-1.
struct BoxRow {
    int first = 0;
    int count = 0;
    std::array<double, 4> weight{};  // a cell spans 28/9 < 4 pixels, so at most 4 overlap
};

std::array<BoxRow, kSide9> make_rows() {
    std::array<BoxRow, kSide9> rows{};
    for (int i = 0; i < kSide9; ++i) {
        BoxRow& row = rows[static_cast<std::size_t>(i)];
        row.first = -1;
        for (int j = 0; j < kSide28; ++j) {
            if (box_overlap_ninths(i, j) == 0) continue;
            if (row.first < 0) row.first = j;
            row.weight[static_cast<std::size_t>(row.count++)] = box_weight(i, j);
        }
    }
    return rows;
}

const std::array<BoxRow, kSide9>& rows() {
    static const std::array<BoxRow, kSide9> r = make_rows();
    return r;
}

}  // namespace

double box_weight(int i, int j) { return static_cast<double>(box_overlap_ninths(i, j)) / 28.0; }

void resize_28_to_9(const std::uint8_t* image28, float* image9) {
    const auto& a = rows();
    // t[j][k] = Σ_l x[j][l] A[k][l]
    double t[kSide28][kSide9];
    for (int j = 0; j < kSide28; ++j) {
        double x[kSide28];
        for (int l = 0; l < kSide28; ++l)
            x[l] = static_cast<double>(static_cast<float>(image28[j * kSide28 + l]) / 255.0f);
        for (int k = 0; k < kSide9; ++k) {
            const BoxRow& row = a[static_cast<std::size_t>(k)];
            double s = 0.0;
            for (int m = 0; m < row.count; ++m) s += x[row.first + m] * row.weight[static_cast<std::size_t>(m)];
            t[j][k] = s;
        }
    }
    // y[i][k] = Σ_j A[i][j] t[j][k], clipped, rounded once to float32.
    for (int i = 0; i < kSide9; ++i) {
        const BoxRow& row = a[static_cast<std::size_t>(i)];
        for (int k = 0; k < kSide9; ++k) {
            double s = 0.0;
            for (int m = 0; m < row.count; ++m) s += row.weight[static_cast<std::size_t>(m)] * t[row.first + m][k];
            s = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s);
            image9[i * kSide9 + k] = static_cast<float>(s);
        }
    }
}

std::vector<float> resize_28_to_9(std::span<const std::uint8_t> images28) {
    constexpr std::size_t in = kSide28 * kSide28, out = kSide9 * kSide9;
    if (images28.size() % in != 0)
        throw Error("resize_28_to_9: " + std::to_string(images28.size()) +
                    " bytes is not a whole number of 28x28 images");
    const std::size_t n = images28.size() / in;
    std::vector<float> result(n * out);
    for (std::size_t e = 0; e < n; ++e) resize_28_to_9(images28.data() + e * in, result.data() + e * out);
    return result;
}

}  // namespace revgraph::data
