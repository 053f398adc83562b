#pragma once
// Parameter layout of docs/spec.md §3: every parameter lives in one flat buffer, in name order
// (weights.0 … weights.{2D-1}, head.weight, head.bias). Backends keep parameters, gradients
// and momentum each as one buffer with this layout, so one offset table serves all three.
#include <cstddef>
#include <string>
#include <vector>

namespace revgraph::model {

inline constexpr int kPixels = 81;  // 9x9 image, row-major
inline constexpr int kClasses = 10;
// rev88's width: the pixels plus one appended zero (the smallest injective lift), two halves of 41.
// Every backend takes any width of TaskConfig's range through Layout; cuda-fused has a step written
// for this one (engine/cuda/fused.hpp) and the any-width step for the rest (engine/cuda/fused_any/).
inline constexpr int kFeatures = 82;
inline constexpr int kHalf = kFeatures / 2;
inline constexpr std::size_t kBranchSize = static_cast<std::size_t>(kHalf) * kHalf;
inline constexpr std::size_t kHeadWeightSize = static_cast<std::size_t>(kClasses) * kFeatures;

struct ParameterView {
    std::string name;
    std::size_t offset;      // in elements from the start of the flat buffer
    std::size_t rows, cols;  // [out, in]; head.bias is rows=10, cols=1
    std::size_t size() const { return rows * cols; }
};

class Layout {
public:
    // width: the lifted coordinates, even and > 81 (TaskConfig checks the range; this the shape).
    explicit Layout(int depth, int width = kFeatures);

    int depth() const { return depth_; }
    int width() const { return width_; }
    int half() const { return width_ / 2; }
    int branch_count() const { return 2 * depth_; }
    std::size_t total() const { return total_; }
    std::size_t branch_size() const { return static_cast<std::size_t>(half()) * half(); }
    std::size_t head_weight_size() const { return static_cast<std::size_t>(kClasses) * width_; }

    // weights.{i}: i in 0 .. 2D-1. Branch 2k is block k's F (reads right), 2k+1 its G (reads left).
    std::size_t branch_offset(int i) const { return static_cast<std::size_t>(i) * branch_size(); }
    std::size_t head_weight_offset() const { return branch_offset(branch_count()); }
    std::size_t head_bias_offset() const { return head_weight_offset() + head_weight_size(); }

    // Every named parameter in name order.
    const std::vector<ParameterView>& views() const { return views_; }

private:
    int depth_;
    int width_;
    std::size_t total_;
    std::vector<ParameterView> views_;
};

}  // namespace revgraph::model
