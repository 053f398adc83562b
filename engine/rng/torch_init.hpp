#pragma once
// PyTorch's CPU random streams as the published learner used them (SPEC §6): mt19937 seeded by
// torch.manual_seed, float32 uniform_ and the AVX2 normal_ path (Box-Muller in blocks of 16 with
// the Cephes log/sincos approximations), and nn.Linear's default init.
#include <cstddef>
#include <cstdint>

#include "engine/model/layout.hpp"

namespace revgraph::rng {

class Mt19937 {
public:
    explicit Mt19937(std::uint32_t seed);
    std::uint32_t next();

private:
    std::uint32_t mt_[624];
    int index_;
};

// torch's float32 uniform: (r & 0xFFFFFF) * 2^-24.
float torch_uniform01(Mt19937& gen);

// tensor.normal_(mean, std) on n contiguous float32 values (AVX2 path for n >= 16).
void torch_normal(Mt19937& gen, float* data, std::size_t n, float mean, float std);

// tensor.uniform_(from, to) on n contiguous float32 values.
void torch_uniform(Mt19937& gen, float* data, std::size_t n, double from, double to);

// The published learner's initialisation into a flat parameter buffer of `layout`:
// manual_seed(seed); normal_(0, 0.05/sqrt(41)) on each branch weight in order; then the default
// nn.Linear(82, 10) init of head.weight and head.bias.
void init_parameters(const model::Layout& layout, std::uint64_t seed, float* params);

}  // namespace revgraph::rng
