#pragma once
// cuBLASLt for the backend's matrix products. Each distinct shape (transposes, m, n, k, leading
// dimensions, batch and strides, operand alignments: in practice one per product kind and row count —
// full batch, short last batch, Q-row predict) gets its descriptors and ONE algorithm, chosen once by
// the heuristic at prepare() and pinned: FP32 compute (CUBLAS_COMPUTE_32F_PEDANTIC where the library
// has an algorithm for it, else CUBLAS_COMPUTE_32F; never TF32 or other reduced-precision inputs),
// no split-K reduction of any kind, and the caller's one workspace. Each call site is then bound to
// its fixed device pointers and scalars, so a launch is a single cublasLtMatmul on a stream, which
// graph capture records like any kernel.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cuda/program.hpp"

namespace revgraph::cuda {

class LtMatmuls {
public:
    LtMatmuls(void* workspace, std::size_t workspace_bytes);
    ~LtMatmuls();
    LtMatmuls(const LtMatmuls&) = delete;
    LtMatmuls& operator=(const LtMatmuls&) = delete;

    // One product (or strided batch of products) at fixed device pointers; returns its id for launch().
    // A strided batch for which the library has no deterministic FP32 algorithm (its strides keep
    // only the operands' 4-byte alignment) is bound as its products one by one, launched in order:
    // the same numbers, one launch per product instead of one for all.
    int bind(const GemmSpec& spec, const float* a, const float* b, float* d);
    void launch(int id, cudaStream_t stream) const;

    std::size_t shape_count() const { return shapes_.size(); }
    std::size_t bound_count() const { return bound_.size(); }
    // Strided batches bound product by product (see bind()).
    int split_batches() const { return split_batches_; }
    // Every shape with its pinned algorithm (id, tile, stages, split-K, reduction, compute type).
    nlohmann::ordered_json describe() const;

private:
    struct Shape;
    struct Bound {
        int shape = 0;
        const float* a = nullptr;
        const float* b = nullptr;
        float* d = nullptr;
        float alpha = 1.0f;
        float beta = 0.0f;
    };
    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    std::size_t workspace_bytes_ = 0;
    std::vector<std::unique_ptr<Shape>> shapes_;
    std::map<std::string, int> shape_index_;
    std::vector<Bound> calls_;                // every cublasLtMatmul, in bind order
    std::vector<std::pair<int, int>> bound_;  // per id: first call, number of calls
    int split_batches_ = 0;

    int shape_for(const GemmSpec& spec, const float* a, const float* b, const float* d);
};

// The largest power of two (up to 256) that divides the address: what cuBLASLt may assume.
std::uint32_t pointer_alignment(const void* p);

}  // namespace revgraph::cuda
