#pragma once
// Which cuBLASLt candidate algorithm LtMatmuls may pin (engine/cuda/lt_matmul.cpp), and what a
// product runs on when none may be pinned, as plain functions of what cuBLASLt answered, so they are
// tested without a GPU or cuBLASLt (test/tools/test_lt_candidate.cpp). No CUDA header here: the
// cuBLASLt constants come in as arguments.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// The heuristic's answer for one compute type, in the order they are asked (PEDANTIC first).
struct LtQuery {
    std::string compute;  // "CUBLAS_COMPUTE_32F_PEDANTIC", ...
    int status = 0;       // cublasLtMatmulAlgoGetHeuristic's status; 0 = success
    std::vector<LtCandidate> candidates;
};

// The candidate to pin: the first that passes the filter, in the order of the queries and then of
// the heuristic's ranking; or, where none does, why, in one line: for each compute type the
// heuristic's failing status, or its candidates counted by the first reason each was refused.
struct LtChoice {
    int query = -1, candidate = -1;  // -1: none may be pinned
    std::string why_none;
    bool pinned() const { return query >= 0; }
};

inline LtChoice choose_lt_candidate(const std::vector<LtQuery>& queries, const LtFilter& f) {
    LtChoice choice;
    for (std::size_t q = 0; q < queries.size(); ++q) {
        const LtQuery& query = queries[q];
        std::string why = query.compute + ": ";
        if (query.status != 0) {
            why += "heuristic status " + std::to_string(query.status);
        } else if (query.candidates.empty()) {
            why += "no candidates";
        } else {
            std::map<std::string, int> refused;  // reason -> count, in a fixed (sorted) order
            for (std::size_t i = 0; i < query.candidates.size(); ++i) {
                const char* problem = lt_candidate_problem(query.candidates[i], f);
                if (problem == nullptr) {
                    choice.query = static_cast<int>(q);
                    choice.candidate = static_cast<int>(i);
                    choice.why_none.clear();
                    return choice;
                }
                ++refused[problem];
            }
            why += std::to_string(query.candidates.size()) + " candidates, none deterministic FP32 (";
            bool first = true;
            for (const auto& [reason, n] : refused) {
                why += (first ? "" : ", ") + std::to_string(n) + " " + reason;
                first = false;
            }
            why += ")";
        }
        choice.why_none += (choice.why_none.empty() ? "" : "; ") + why;
    }
    if (queries.empty()) choice.why_none = "no compute type was asked";
    return choice;
}

// What a product (a strided batch of `batch` products) runs on, from what cuBLASLt could pin:
//  - lt:          one pinned algorithm for the whole (strided batch);
//  - lt_each:     a batch whose whole cannot be pinned but every single product can (each single is
//                 its own shape: the operands' alignments differ), launched one by one, in order;
//  - hand_kernel: the hand-written kernel (engine/cuda/ops/gemm.hpp): one thread an output element,
//                 k summed in index order without fused multiply-adds, the emulator's very sum.
// Deterministic either way; only the speed differs.
enum class ProductPath { lt, lt_each, hand_kernel };

inline ProductPath product_path(bool whole_pinned, int batch, bool every_single_pinned) {
    if (whole_pinned) return ProductPath::lt;
    if (batch > 1 && every_single_pinned) return ProductPath::lt_each;
    return ProductPath::hand_kernel;
}

inline const char* product_path_name(ProductPath p) {
    switch (p) {
        case ProductPath::lt: return "cuBLASLt";
        case ProductPath::lt_each: return "cuBLASLt, one product at a time";
        default: return "the hand-written kernel";
    }
}

}  // namespace revgraph::cuda
