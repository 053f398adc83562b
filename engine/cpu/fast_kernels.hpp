#pragma once
// The fast CPU backend's compute core, compiled once per instruction set (fast_avx512.cpp,
// fast_avx2.cpp, fast_portable.cpp) from the one template in fast_kernels.inl.
//
// Layout: every batch-sized matrix is feature-major ("transposed"): row f holds feature f of
// every example, `ld` floats apart, so SIMD lanes run along the batch. A half is never padded, and
// weights are read in place from the flat parameter buffer (model::Layout order) as broadcast
// scalars: W for the forward (sum over the input index) and Wᵀ for the backward (sum over the
// output index) are the same buffer read with swapped strides, so no transposed copy exists to
// fall out of sync.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace revgraph::cpu::fast {

// portable_fma: generic vectors with fused multiply-adds, the same bits as avx2 and avx512;
// portable: generic vectors, plain multiply and add (for processors without FMA), bits of its own.
enum class Isa { portable, portable_fma, avx2, avx512 };

const char* isa_name(Isa isa);
// Compiled in, and the processor has it (AVX2 also needs FMA; AVX-512 needs F, VL, DQ, BW).
bool isa_supported(Isa isa);
// The fastest supported instruction set (portable_fma only where FMA is in hardware).
Isa best_isa();
// Every supported instruction set, fastest first (tests run them all).
std::vector<Isa> supported_isas();

// Everything one task needs, owned by FastBackend and sized once in prepare(): the kernels
// below never allocate.
struct Workspace {
    // Model and optimiser.
    int depth = 0;
    int width = 0, half = 0;  // lifted coordinates (82 for rev88) and width / 2
    float alpha = 0, learning_rate = 0, momentum = 0, weight_decay = 0;
    std::size_t parameter_count = 0;
    std::size_t head_weight_offset = 0, head_bias_offset = 0;
    float* params = nullptr;
    float* grads = nullptr;
    float* velocity = nullptr;

    // Inputs: raw pixels and labels, and the lifted training rows made by normalize() (query
    // pixels are lifted by predict() as it loads each chunk: they are read only once).
    std::int64_t train_count = 0, test_count = 0;
    const float* train_pixels = nullptr;         // N x 81
    const std::int64_t* train_labels = nullptr;  // N
    const float* test_pixels = nullptr;          // Q x 81
    float* train_rows = nullptr;                 // N x width, example-major (gathered by the permutation each step)

    // One training batch, feature-major with leading dimension ld = min(batch_size, N).
    int ld = 0;
    float* state = nullptr;    // width x ld: the only core activations kept from forward to backward
    float* dstate = nullptr;   // width x ld
    float* relu_l = nullptr;   // half x ld scratch: relu(left) of the current block
    float* relu_r = nullptr;   // half x ld scratch: relu(right)
    float* scores = nullptr;   // 10 x ld
    float* dscores = nullptr;  // 10 x ld
    float* labels = nullptr;   // ld, the batch's labels as floats (compared lane-wise)

    // Prediction runs over column chunks of width pld with its own scratch.
    int pld = 0;
    float* pstate = nullptr;      // width x pld
    float* prelu_l = nullptr;     // half x pld
    float* prelu_r = nullptr;     // half x pld
    float* pscores = nullptr;     // 10 x pld
    float* out_scores = nullptr;  // Q x 10 (the backend takes each row's argmax: model::argmax_row)
};

struct Ops {
    void (*normalize)(Workspace& w);  // lifts the training rows
    // One SGD step on the examples order[0 .. rows-1] (rows <= ld).
    void (*step)(Workspace& w, const std::int64_t* order, int rows);
    void (*predict)(Workspace& w);
};

// The kernels of one instruction set; nullptr where it is not compiled in.
const Ops* ops_portable();
const Ops* ops_portable_fma();
const Ops* ops_avx2();
const Ops* ops_avx512();
// Throws if the instruction set is not supported here.
const Ops& ops(Isa isa);

}  // namespace revgraph::cpu::fast
