#pragma once
// A label or a prediction is a class, 0..9 (model::kClasses): the one check of that, for every
// reader of labels (task inputs, label .npy files, IDX files, the draws, the embedded digits) and
// of predictions (verify), each naming its source and the first value outside, with its index.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/error.hpp"
#include "engine/model/layout.hpp"

namespace revgraph {

template <typename T>
void check_classes(std::span<const T> values, const std::string& where, const std::string& noun = "label") {
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto v = static_cast<std::int64_t>(values[i]);
        if (v < 0 || v >= model::kClasses)
            throw Error(where + ": " + noun + " " + std::to_string(v) + " at index " + std::to_string(i) +
                        " is outside 0.." + std::to_string(model::kClasses - 1));
    }
}

}  // namespace revgraph
