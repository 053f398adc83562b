#pragma once
// cuBLASLt for the backend's matrix products. Each distinct shape (transposes, m, n, k, leading
// dimensions, batch and strides, operand alignments: in practice one per product kind and row count —
// full batch, short last batch, Q-row predict) gets its descriptors and ONE algorithm, chosen once by
// the heuristic at prepare() and pinned: FP32 compute (CUBLAS_COMPUTE_32F_PEDANTIC where the library
// has an algorithm for it, else CUBLAS_COMPUTE_32F; never TF32 or other reduced-precision inputs),
// no split-K reduction of any kind, and the caller's workspace (one per stream: a second for the
// products run beside the chain). Each call site is then bound to
// its fixed device pointers and scalars, so a launch is a single cublasLtMatmul on a stream, which
// graph capture records like any kernel. Where the library offers no such algorithm for a product,
// the product runs on the hand-written kernel (engine/cuda/ops/gemm.hpp: k summed in index order, the
// emulator's very sum) instead of failing prepare(), and one line says which product and why
// (hand_kernel_products(); the choice is lt_candidate.hpp's, tested without a GPU).
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
    // force_hand_kernel: every product on the hand-written kernel (the GPU suite checks that path).
    LtMatmuls(void* workspace, std::size_t workspace_bytes, bool force_hand_kernel = false);
    ~LtMatmuls();
    LtMatmuls(const LtMatmuls&) = delete;
    LtMatmuls& operator=(const LtMatmuls&) = delete;

    // One product (or strided batch of products) at fixed device pointers; returns its id for launch().
    // A strided batch for which the library has no deterministic FP32 algorithm (its strides keep
    // only the operands' 4-byte alignment) is bound as its products one by one, launched in order:
    // the same numbers, one launch per product instead of one for all. A product with no such
    // algorithm at all (whole, or one of a batch's singles) runs on the hand-written kernel. The same
    // product at the same pointers bound again (a step's programs serve the eager step and the epoch
    // graph) gets the first id: one call site, counted once in what describe() and the counts report.
    int bind(const GemmSpec& spec, const float* a, const float* b, float* d);
    // A second workspace of the same size, for products on the second stream (GemmOp::beside): two
    // products that may run at once must not share one. (Null with a workspace of 0 bytes.)
    void add_side_workspace(void* side_workspace) { side_workspace_ = side_workspace, side_lane_ = true; }
    bool has_side_workspace() const { return side_lane_; }
    // side: on the second stream, with the side workspace (throws where none was added).
    void launch(int id, cudaStream_t stream, bool side = false) const;

    std::size_t shape_count() const { return shapes_.size(); }
    std::size_t bound_count() const { return bound_.size(); }
    // Strided batches bound product by product (see bind()).
    int split_batches() const { return split_batches_; }
    // One line per product bound to the hand-written kernel: its shape and alignments, why cuBLASLt
    // pinned nothing (per compute type: the heuristic's status, or its candidates counted by reason).
    const std::vector<std::string>& hand_kernel_products() const { return hand_kernel_; }
    // Every shape with its pinned algorithm (id, tile, stages, split-K, reduction, compute type).
    nlohmann::ordered_json describe() const;

private:
    struct Shape;
    struct Bound {
        int shape = 0;  // -1: the hand-written kernel
        GemmSpec spec;  // what the hand-written kernel computes
        const float* a = nullptr;
        const float* b = nullptr;
        float* d = nullptr;
        float alpha = 1.0f;
        float beta = 0.0f;
    };
    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    void* side_workspace_ = nullptr;
    bool side_lane_ = false;
    std::size_t workspace_bytes_ = 0;
    std::vector<std::unique_ptr<Shape>> shapes_;
    std::map<std::string, int> shape_index_;
    std::map<std::string, std::string> unpinned_;  // shapes cuBLASLt pinned nothing for, and why
    std::vector<Bound> calls_;                     // every cublasLtMatmul, in bind order
    std::vector<std::pair<int, int>> bound_;       // per id: first call, number of calls
    std::map<std::string, int> site_index_;        // a bound call site (spec, alpha, pointers) -> its id
    int split_batches_ = 0;
    bool force_hand_kernel_ = false;
    std::vector<std::string> hand_kernel_;

    // The pinned shape's index, or -1 with *why_not (one line) where no candidate may be pinned.
    int shape_for(const GemmSpec& spec, const float* a, const float* b, const float* d, std::string* why_not);
};

// The largest power of two (up to 256) that divides the address: what cuBLASLt may assume.
std::uint32_t pointer_alignment(const void* p);

}  // namespace revgraph::cuda
