#pragma once
// The order in which the float32 trainer adds a sum's terms, written once: L lanes, term i added into
// lane i mod L (each lane from +0, in ascending i), the lanes then joined by one fixed pairwise tree —
// L = 4: (l0 + l1) + (l2 + l3). L = 1 is plain index order: the order of the reference trainer and of
// every backend built to give its bits (cpu-reference, cuda-fused, the emulator) today; `cpu` and
// `cuda` sum in orders of their own (docs/spec.md §7).
//
// Why lanes: on the GPU a sum is a chain of dependent adds, and a rev88 fused step's critical path
// is 681 of them in index order; L lanes cut a chain of n adds to ceil(n/L) plus log2(L) joins
// (210 a step at L = 4) while every backend that follows the rule still gives the same bits. L = 4
// also matches a 16-byte load (four terms) and a SIMD register's lanes. Which L the trainer adopts
// (kEngineSumLanes) is the open choice of issue "Speed to the floor", made once a GPU has priced the
// orders (the kernel lab runs cuda-fused's step in each: bench/labs/kernel_lab.cpp); until then those
// backends run L = 1, and the other counts serve the CPU study of what an order does to accuracy and
// predictions (bench/labs/order_lab.cpp; bench/NOTES.md, "The order lab") and the kernel lab.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "engine/model/math.hpp"

namespace revgraph::model {

// The lane counts the rule admits: powers of two up to 8 (the join is a pairwise tree).
RG_HD constexpr bool valid_sum_lanes(int lanes) { return lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8; }
inline constexpr int kSumLaneCounts[] = {1, 2, 4, 8};

// The order the engine trains in, written once: the reference trainer's default and cuda-fused's
// (fused::kSumLanes; fused_any::kSumLanes, which the exported race entry carries as text, is held
// equal to it by a static_assert in engine/cuda/fused_any_shape.hpp). 1 lane, index order, until
// the choice above is made.
inline constexpr int kEngineSumLanes = 1;

// Joins lanes[0 .. Count) in place by the rule's tree; the sum ends in lanes[0]. Level by level,
// neighbours in pairs: 8 lanes give ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). Lane j is written only
// after lanes 2j and 2j+1 were read, and no later pair reads it.
template <int Count, typename T>
RG_HD void join_lanes(T* lanes) {
    static_assert(valid_sum_lanes(Count), "sum lanes: 1, 2, 4 or 8");
    RG_DEVICE_UNROLL
    for (int width = Count / 2; width >= 1; width /= 2) RG_DEVICE_UNROLL
    for (int j = 0; j < width; ++j) lanes[j] = lanes[2 * j] + lanes[2 * j + 1];
}

// sum over i < n of term(i), in the rule's order for Lanes lanes. The lane count is a compile-time
// constant and every index into the lanes one too (terms Lanes at a time, the lane loop unrolled),
// so that device code keeps the lanes in registers, not in local memory.
template <int Lanes, typename T, class Term>
RG_HD T lane_sum(int n, Term term) {
    static_assert(valid_sum_lanes(Lanes), "sum lanes: 1, 2, 4 or 8");
    T acc[Lanes];
    RG_DEVICE_UNROLL
    for (int l = 0; l < Lanes; ++l) acc[l] = T(0);
    for (int i0 = 0; i0 < n; i0 += Lanes) RG_DEVICE_UNROLL
    for (int l = 0; l < Lanes; ++l)
        if (i0 + l < n) acc[l] += term(i0 + l);
    join_lanes<Lanes>(acc);
    return acc[0];
}

// Calls f(std::integral_constant<int, L>{}) for L = lanes, one of the rule's counts: where host code
// turns a lane count known at run time into a compile-time one (the reference trainer's sums, the
// fused kernels' instantiations in their launchers and the emulator).
template <class F>
void with_sum_lanes(int lanes, F&& f) {
    switch (lanes) {
        case 1: f(std::integral_constant<int, 1>{}); return;
        case 2: f(std::integral_constant<int, 2>{}); return;
        case 4: f(std::integral_constant<int, 4>{}); return;
        case 8: f(std::integral_constant<int, 8>{}); return;
    }
    throw std::invalid_argument("sum lanes must be 1, 2, 4 or 8");
}

// lane_sum for a lane count known at run time (host code: the reference trainer).
template <typename T, class Term>
inline T lane_sum_any(int n, int lanes, Term term) {
    T sum{};
    with_sum_lanes(lanes, [&](auto l) { sum = lane_sum<decltype(l)::value, T>(n, term); });
    return sum;
}

// model::softmax_xent_grad_row (math.hpp) with the row's sum of exponentials in `lanes` lanes: the
// same pieces in the same steps, only the sum's order given (1 lane: its very bits). Host code (the
// reference trainer); here, not in math.hpp, so that device code and the exported race entry, which
// carry math.hpp's text, do not carry the lane rule's.
template <typename T>
inline T softmax_xent_grad_row_lanes(const T* scores, std::int64_t label, int rows, T* dscores, int lanes) {
    const T m = row_max(scores);
    T e[kClasses];
    for (int j = 0; j < kClasses; ++j) e[j] = softmax_exp(scores[j] - m);
    const T sum = lane_sum_any<T>(kClasses, lanes, [&](int j) { return e[j]; });
    const T inv_rows = inverse_rows<T>(rows);
    for (int j = 0; j < kClasses; ++j) dscores[j] = xent_grad(e[j], sum, j == label, inv_rows);
    return std::log(sum) + m - scores[label];
}

// The same sums for many outputs at once, as the reference's backward products run them: `count`
// sums advance together along contiguous rows (vectorised across outputs, never within one sum).
// Term i of every sum goes into lane_of(i); sums() joins the lanes by join_lanes' tree, a lane row
// at a time. Host code.
template <typename T>
class LaneRows {
public:
    LaneRows(int count, int lanes) : count_(count), lanes_(lanes), acc_(static_cast<std::size_t>(count) * lanes) {
        if (!valid_sum_lanes(lanes)) throw std::invalid_argument("LaneRows: lanes must be 1, 2, 4 or 8");
    }
    void clear() { std::fill(acc_.begin(), acc_.end(), T(0)); }
    // The accumulators term i adds into: one per sum, `count` contiguous values.
    T* lane_of(int i) { return acc_.data() + static_cast<std::size_t>(i % lanes_) * count_; }
    // Joins every sum's lanes (the rule's tree, lane rows pairwise) in place and returns the sums:
    // once after the terms, as the join consumes the lanes; valid until the next clear().
    const T* sums() {
        for (int width = lanes_ / 2; width >= 1; width /= 2)
            for (int j = 0; j < width; ++j) {
                T* dst = acc_.data() + static_cast<std::size_t>(j) * count_;
                const T* a = acc_.data() + static_cast<std::size_t>(2 * j) * count_;
                const T* b = a + count_;
                for (int k = 0; k < count_; ++k) dst[k] = a[k] + b[k];
            }
        return acc_.data();
    }

private:
    int count_, lanes_;
    std::vector<T> acc_;
};

}  // namespace revgraph::model
