#include "engine/model/layout.hpp"

#include "engine/error.hpp"

namespace revgraph::model {

Layout::Layout(int depth, int width) : depth_(depth), width_(width) {
    if (depth < 1) throw Error("model: depth must be >= 1, got " + std::to_string(depth));
    if (width <= kPixels || width % 2 != 0)
        throw Error("model: width must be even and > " + std::to_string(kPixels) + ", got " + std::to_string(width));
    const std::size_t h = static_cast<std::size_t>(half());
    for (int i = 0; i < branch_count(); ++i) views_.push_back({"weights." + std::to_string(i), branch_offset(i), h, h});
    views_.push_back({"head.weight", head_weight_offset(), kClasses, static_cast<std::size_t>(width_)});
    views_.push_back({"head.bias", head_bias_offset(), kClasses, 1});
    total_ = head_bias_offset() + kClasses;
}

}  // namespace revgraph::model
