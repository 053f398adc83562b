#pragma once
// Which cuBLASLt candidate algorithm LtMatmuls may pin (engine/cuda/lt_matmul.cpp), as a plain
// function of what cuBLASLt answered, so it is tested without a GPU or cuBLASLt
// (test/tools/test_lt_candidate.cpp). No CUDA header here: the cuBLASLt constants come in as
// arguments.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace revgraph::cuda {

// What cuBLASLt said about one candidate: an empty optional is a query that failed. A failed query
// must reject the candidate, never read as zero: zero impl flags and a zero reduction scheme are
// exactly what the filter lets through.
struct LtCandidate {
    bool heuristic_ok = false;  // the heuristic result's own state
    std::size_t workspace = 0;  // bytes it needs
    std::optional<std::int32_t> splitk, algo_id;
    std::optional<std::uint32_t> reduction, tile, stages;
    std::optional<std::uint64_t> impl_flags;  // CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS
};

struct LtFilter {
    std::size_t workspace_bytes = 0;   // the workspace LtMatmuls owns
    std::uint32_t reduction_none = 0;  // CUBLASLT_REDUCTION_SCHEME_NONE
    std::uint64_t reduced_inputs = 0;  // the impl flags of inputs narrower than FP32 (TF32, half, ...)
};

// Why the candidate cannot be pinned, or null: it failed, needs more workspace than there is, one of
// its queries failed, it splits K or reduces through the workspace (the sum's order would follow the
// schedule), or it reads its inputs narrower than FP32 (the model's numbers would change).
inline const char* lt_candidate_problem(const LtCandidate& c, const LtFilter& f) {
    if (!c.heuristic_ok) return "the heuristic's result failed";
    if (c.workspace > f.workspace_bytes) return "needs more workspace";
    if (!c.splitk || !c.reduction || !c.impl_flags || !c.algo_id || !c.tile || !c.stages)
        return "a configuration or capability query failed";
    if (*c.splitk > 1) return "splits K";
    if (*c.reduction != f.reduction_none) return "reduces through the workspace";
    if ((*c.impl_flags & f.reduced_inputs) != 0) return "inputs narrower than FP32";
    return nullptr;
}

}  // namespace revgraph::cuda
