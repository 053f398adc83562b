#pragma once
// docs/spec.md §9 pixels: 28x28 bytes -> 9x9 float32 in [0,1] by box-area resize with exact overlap
// weights.
//
// Exact arithmetic, so that every build gives the same bits:
//  1. x[j][l] = float32(byte) / 255.0f, one float32 division (numpy: a.astype(float32) / 255).
//  2. A (9x28): output cell i covers the input interval [i·28/9, (i+1)·28/9); A[i][j] is its
//     overlap with pixel [j, j+1) divided by 28/9. Measured in ninths of a pixel the overlap is
//     an integer u(i,j) = |[28i, 28i+28) ∩ [9j, 9j+9)| in 0..9, each row of u sums to 28, and
//     A[i][j] = double(u) / 28.0 (one correctly rounded double division).
//  3. In double, with x widened exactly: t[j][k] = Σ_l x[j][l]·A[k][l] (l ascending), then
//     y[i][k] = Σ_j A[i][j]·t[j][k] (j ascending), i.e. y = A x Aᵀ. Every product and sum is
//     rounded separately (no fused multiply-add; the build sets -ffp-contract=off). Terms with
//     A = 0 are skipped; they would add exact zeros.
//  4. y is clipped to [0, 1] and rounded once to float32 (round to nearest even).
#include <cstdint>
#include <span>
#include <vector>

namespace revgraph::data {

inline constexpr int kSide28 = 28;
inline constexpr int kSide9 = 9;

// u(i, j): overlap of output cell i and input pixel j in ninths of a pixel (0..9).
constexpr int box_overlap_ninths(int i, int j) {
    const int lo = 28 * i > 9 * j ? 28 * i : 9 * j;
    const int hi = 28 * (i + 1) < 9 * (j + 1) ? 28 * (i + 1) : 9 * (j + 1);
    return hi > lo ? hi - lo : 0;
}

// A[i][j] = u(i, j) / 28.0.
double box_weight(int i, int j);

// One image: 784 bytes (row-major 28x28) -> 81 floats (row-major 9x9).
void resize_28_to_9(const std::uint8_t* image28, float* image9);

// n images: n*784 bytes -> n*81 floats, i.e. an (n,1,9,9) array. Throws revgraph::Error when
// the size is not a multiple of 784.
std::vector<float> resize_28_to_9(std::span<const std::uint8_t> images28);

}  // namespace revgraph::data
