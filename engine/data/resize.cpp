#include "engine/data/resize.hpp"

#include <array>
#include <cstddef>
#include <string>

#include "engine/error.hpp"

namespace revgraph::data {
namespace {

// The weights of one output cell: input pixels first .. first+3. A cell spans 28/9 < 4 pixels, so
// at most 4 overlap; where only 3 do, the 4th weight is 0 (first + 3 <= 27 for every cell). The
// spec skips zero terms; adding one changes no bit, because every sum is of non-negative products
// (+0.0 added to a sum >= +0.0 leaves it as it is), and a fixed 4 terms makes the loops below
// branch-free and vector code.
struct BoxRow {
    int first = 0;
    std::array<double, 4> weight{};
};

std::array<BoxRow, kSide9> make_rows() {
    std::array<BoxRow, kSide9> rows{};
    for (int i = 0; i < kSide9; ++i) {
        BoxRow& row = rows[static_cast<std::size_t>(i)];
        row.first = -1;
        int count = 0;
        for (int j = 0; j < kSide28; ++j) {
            if (box_overlap_ninths(i, j) == 0) continue;
            if (row.first < 0) row.first = j;
            row.weight[static_cast<std::size_t>(count++)] = box_weight(i, j);
        }
        if (row.first + 3 >= kSide28) throw Error("resize: a 9x9 cell runs past the 28th pixel");  // cannot happen
    }
    return rows;
}

const std::array<BoxRow, kSide9>& rows() {
    static const std::array<BoxRow, kSide9> r = make_rows();
    return r;
}

// Step 1 for each of the 256 byte values, widened to double: a table look-up gives the same bits
// as the float32 division it holds.
std::array<double, 256> make_byte_values() {
    std::array<double, 256> v{};
    for (int b = 0; b < 256; ++b) v[static_cast<std::size_t>(b)] = static_cast<double>(static_cast<float>(b) / 255.0f);
    return v;
}

const std::array<double, 256>& byte_values() {
    static const std::array<double, 256> v = make_byte_values();
    return v;
}

}  // namespace

double box_weight(int i, int j) { return static_cast<double>(box_overlap_ninths(i, j)) / 28.0; }

void resize_28_to_9(const std::uint8_t* image28, float* image9) {
    const auto& a = rows();
    const auto& value = byte_values();
    // x transposed, xt[l][j] = x[j][l], so that step 3's first sum runs along contiguous j.
    double xt[kSide28][kSide28];
    for (int j = 0; j < kSide28; ++j)
        for (int l = 0; l < kSide28; ++l) xt[l][j] = value[image28[j * kSide28 + l]];
    // t[j][k] = Σ_l x[j][l] A[k][l], kept as tk[k][j]; the sum is in l order, one rounding each.
    double tk[kSide9][kSide28];
    for (int k = 0; k < kSide9; ++k) {
        const BoxRow& row = a[static_cast<std::size_t>(k)];
        const double* x0 = xt[row.first];
        const double* x1 = xt[row.first + 1];
        const double* x2 = xt[row.first + 2];
        const double* x3 = xt[row.first + 3];
        const double w0 = row.weight[0], w1 = row.weight[1], w2 = row.weight[2], w3 = row.weight[3];
        for (int j = 0; j < kSide28; ++j) {
            double s = 0.0;
            s += x0[j] * w0;
            s += x1[j] * w1;
            s += x2[j] * w2;
            s += x3[j] * w3;
            tk[k][j] = s;
        }
    }
    // y[i][k] = Σ_j A[i][j] t[j][k], in j order, clipped, rounded once to float32.
    for (int i = 0; i < kSide9; ++i) {
        const BoxRow& row = a[static_cast<std::size_t>(i)];
        const int f = row.first;
        for (int k = 0; k < kSide9; ++k) {
            const double* t = tk[k] + f;
            double s = 0.0;
            s += row.weight[0] * t[0];
            s += row.weight[1] * t[1];
            s += row.weight[2] * t[2];
            s += row.weight[3] * t[3];
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
