#include "engine/cuda/staged_inputs.hpp"

#include <cstddef>

#include "engine/error.hpp"
#include "engine/inputs.hpp"

namespace revgraph::cuda {

StagedInputs stage_inputs(const TaskPlan& plan, const PreparedInputs& p) {
    const TaskInputs& in = *p.inputs;
    const std::int64_t n = plan.train_count();
    if (p.initial_parameters.size() != plan.elements(Buf::initial))
        throw Error("cuda: initial parameters have the wrong size");
    if (in.train_images.size() != plan.elements(Buf::train_raw) ||
        in.test_images.size() != plan.elements(Buf::query_raw))
        throw Error("cuda: pixel arrays have the wrong size");
    if (in.train_labels.size() != plan.elements(Buf::train_labels))
        throw Error("cuda: train labels have the wrong count");
    if (static_cast<int>(p.permutations.size()) < plan.config().epochs) throw Error("cuda: too few epoch permutations");
    StagedInputs s;
    s.initial = p.initial_parameters;
    s.train_raw = in.train_images;
    s.query_raw = in.test_images;
    s.train_labels.assign(in.train_labels.begin(), in.train_labels.end());
    s.permutations.reserve(plan.elements(Buf::permutations));
    for (int e = 0; e < plan.config().epochs; ++e) {
        const auto& perm = p.permutations[static_cast<std::size_t>(e)];
        if (static_cast<std::int64_t>(perm.size()) != n) throw Error("cuda: a permutation has the wrong length");
        for (const std::int64_t v : perm) {
            if (v < 0 || v >= n) throw Error("cuda: a permutation holds an index out of range");
            s.permutations.push_back(static_cast<std::int32_t>(v));
        }
    }
    return s;  // epochs permutations of N each: exactly the buffer's epochs x N
}

}  // namespace revgraph::cuda
