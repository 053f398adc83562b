#include "engine/model/layout.hpp"

#include "engine/error.hpp"

namespace revgraph::model {

Layout::Layout(int depth) : depth_(depth) {
    if (depth < 1) throw Error("model: depth must be >= 1, got " + std::to_string(depth));
    for (int i = 0; i < branch_count(); ++i)
        views_.push_back({"weights." + std::to_string(i), branch_offset(i), kHalf, kHalf});
    views_.push_back({"head.weight", head_weight_offset(), kClasses, kFeatures});
    views_.push_back({"head.bias", head_bias_offset(), kClasses, 1});
    total_ = head_bias_offset() + kClasses;
}

}  // namespace revgraph::model
