#pragma once
// Where the fused kernels keep a row's state and the parameters in shared memory: every half of a
// state row and every weight row starts on 16 bytes, 41 floats and 3 of padding, so that a 41-term
// sum (the couples, the branch rows' input gradients, the scores: engine/cuda/fused.hpp) reads four
// terms a 16-byte load of an operand (ordered_sum4, engine/cuda/ordered_sum.hpp) instead of one.
// Apart from fused.hpp because it is one rule that the phases, their loads and the labs all place
// floats by; it changes where a value sits, never a value or the order of a sum.
//
// Why: a couple phase is a chain of 41 dependent adds behind 82 shared-memory loads a thread, and
// costs ~600 cycles where the adds alone are ~164 (bench/NOTES.md, "A cuda-fused step, phase by
// phase"); four terms a load make those loads 22 (the sum lab's version 2 times this layout alone).
#include <cstddef>

#include "engine/cuda/ordered_sum.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda::fused {

using model::kBranchSize;
using model::kClasses;
using model::kFeatures;
using model::kHalf;

// A half of a state row, or a weight row, padded to whole 16 bytes: 44 floats.
inline constexpr int kPaddedHalf = (kHalf + 3) / 4 * 4;
// A state row in shared memory: the left half at 0, the right at kPaddedHalf. 88 floats are 22
// 16-byte units: the few rows a warp's items read at once (2 at 2 rows a block; the items of a row
// are 41 or more) start in different groups of banks.
inline constexpr int kStateLd = 2 * kPaddedHalf;

// Where column c (0 .. 81) of a row sits in a padded state row, or in a staged head row.
RG_HD int padded_column(int c) { return c < kHalf ? c : c + (kPaddedHalf - kHalf); }

// The parameters as the phases read them. FlatParams: the model's own layout (model::Layout), where
// a block reads them in global memory (they do not fit its shared memory: deep models); a sum reads
// them, and the state beside them, one term a load, as before this layout. PaddedParams: the copy a
// block stages in shared memory, its rows on 16 bytes, read four terms a load. Each names its
// offsets and the kind of run a sum reads (ordered_sum.hpp).
struct FlatParams {
    static constexpr int kBranchLd = kHalf;  // a branch's weight rows, this far apart
    static constexpr int kBranch = static_cast<int>(kBranchSize);
    static constexpr int kHeadLd = kFeatures;  // the head's rows (a class each)
    RG_HD static int head_column(int c) { return c; }
    using Run = ScalarRun;
};
struct PaddedParams {
    static constexpr int kBranchLd = kPaddedHalf;
    static constexpr int kBranch = kHalf * kPaddedHalf;
    // A head row: two padded halves as a state row, and 4 floats more. 92 floats are 23 16-byte units,
    // an odd number, so the rows of 8 neighbouring classes (a quarter warp's 16-byte loads in the
    // scores phase) start in 8 different groups of banks; 88 apart, classes j and j + 4 would share
    // their banks (a 2-way conflict a load).
    static constexpr int kHeadLd = kStateLd + 4;
    RG_HD static int head_column(int c) { return padded_column(c); }
    using Run = AlignedRun;
};
static_assert(PaddedParams::kBranchLd % 4 == 0 && (PaddedParams::kBranchLd / 4) % 2 == 1,
              "weight rows on 16 bytes, 8 neighbouring rows in 8 groups of banks");
static_assert(PaddedParams::kHeadLd % 4 == 0 && (PaddedParams::kHeadLd / 4) % 2 == 1,
              "head rows on 16 bytes, 8 neighbouring rows in 8 groups of banks");

// The offsets of a layout's pieces, for `branches` branches: branch k, the head's weights, its biases.
template <class P>
RG_HD std::size_t branch_at(int k) {
    return static_cast<std::size_t>(k) * P::kBranch;
}
template <class P>
RG_HD std::size_t head_weights_at(int branches) {
    return branch_at<P>(branches);
}
template <class P>
RG_HD std::size_t head_biases_at(int branches) {
    return head_weights_at<P>(branches) + static_cast<std::size_t>(kClasses) * P::kHeadLd;
}

inline constexpr int kHeadParams = kClasses * kFeatures + kClasses;

// Branches of a model of param_count parameters (model::Layout: branches, then the head).
RG_HD int branches_of(int param_count) { return (param_count - kHeadParams) / static_cast<int>(kBranchSize); }

// Floats of the padded copy of param_count parameters, rounded up to whole 16 bytes so that what
// follows it in shared memory (the state) starts on 16 bytes.
RG_HD int padded_param_floats(int param_count) {
    const int floats = static_cast<int>(head_biases_at<PaddedParams>(branches_of(param_count))) + kClasses;
    return (floats + 3) / 4 * 4;
}

// Where flat parameter q sits in the padded copy. The flat array is runs of 41 floats (the branches'
// weight rows, then each head row's two halves), then the 10 biases; run h = q / 41 moves 3 floats
// a run before it (their padding) and, from the head's first run on, 4 more a head row before it
// (a head row's extra 4). The biases fall out as the head's 21st run.
RG_HD int padded_index(int q, int branch_runs) {
    const int h = q / kHalf;  // by a constant: a multiply
    const int head_run = h - branch_runs;
    return q + (kPaddedHalf - kHalf) * h + (head_run > 0 ? (PaddedParams::kHeadLd - kStateLd) * (head_run >> 1) : 0);
}

}  // namespace revgraph::cuda::fused
