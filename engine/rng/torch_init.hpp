#pragma once
// PyTorch's CPU random streams as the published learner used them (docs/spec.md §6): mt19937 seeded by
// torch.manual_seed, float32 uniform_ and the AVX2 normal_ path (Box-Muller in blocks of 16 with
// the Cephes log/sincos approximations), and nn.Linear's default init.
#include <cstddef>
#include <cstdint>

#include "engine/model/layout.hpp"

namespace revgraph::rng {

// torch's CPU generator: the mt19937 engine plus the one cached Box-Muller value of its scalar
// normal path. A fresh object is the state right after torch.manual_seed(seed).
class Mt19937 {
public:
    explicit Mt19937(std::uint32_t seed);
    std::uint32_t next();
    std::uint64_t next64();  // torch's random64(): first draw in the high half

private:
    std::uint32_t mt_[624];
    int index_;
    // Second value of the last double Box-Muller pair (normal_ on fewer than 16 values). The
    // AVX2 path leaves it alone, so it survives across normal_ calls as in torch.
    bool has_next_normal_ = false;
    double next_normal_ = 0.0;
    friend void torch_normal(Mt19937& gen, float* data, std::size_t n, double mean, double std);
};

// torch's float32 uniform: (r & 0xFFFFFF) * 2^-24.
float torch_uniform01(Mt19937& gen);

// tensor.normal_(mean, std) on n contiguous float32 values: the AVX2 path (mean and std rounded to
// float) for n >= 16, torch's scalar double Box-Muller path below that.
void torch_normal(Mt19937& gen, float* data, std::size_t n, double mean, double std);

// tensor.uniform_(from, to) on n contiguous float32 values.
void torch_uniform(Mt19937& gen, float* data, std::size_t n, double from, double to);

// The published learner's initialisation into a flat parameter buffer of `layout`:
// manual_seed(seed); normal_(0, 0.05/sqrt(W/2)) on each W/2 x W/2 branch weight in order; then the
// default nn.Linear(W, 10) init of head.weight and head.bias (W = layout.width(), 82 for rev88).
void init_parameters(const model::Layout& layout, std::uint64_t seed, float* params);

}  // namespace revgraph::rng
