// engine/cuda/lt_candidate.hpp: the cuBLASLt candidate filter of LtMatmuls, without a GPU. A
// candidate whose configuration or capability query fails must be rejected, not read as zeros
// (zero flags and a zero reduction scheme are what the filter passes).
#include "engine/cuda/lt_candidate.hpp"

#include <doctest/doctest.h>

#include <cstring>

using revgraph::cuda::lt_candidate_problem;
using revgraph::cuda::LtCandidate;
using revgraph::cuda::LtFilter;

namespace {
// cuBLASLt's values (cublasLt.h): CUBLASLT_REDUCTION_SCHEME_NONE = 0, _INPUT_TF32 = 0x04 << 16.
constexpr std::uint64_t kTf32 = std::uint64_t{0x04} << 16;
const LtFilter kFilter{1 << 20, 0, kTf32};

LtCandidate good() {
    LtCandidate c;
    c.heuristic_ok = true;
    c.workspace = 4096;
    c.splitk = 1;
    c.reduction = 0;
    c.impl_flags = 0;
    c.algo_id = 21;
    c.tile = 18;
    c.stages = 7;
    return c;
}
}  // namespace

TEST_CASE("a deterministic FP32 candidate passes") { CHECK(lt_candidate_problem(good(), kFilter) == nullptr); }

TEST_CASE("a failed query rejects the candidate") {
    const std::optional<std::int32_t> none_i32;
    const std::optional<std::uint32_t> none_u32;
    for (int which = 0; which < 6; ++which) {
        LtCandidate c = good();
        switch (which) {
            case 0: c.splitk = none_i32; break;
            case 1: c.reduction = none_u32; break;
            case 2: c.impl_flags.reset(); break;
            case 3: c.algo_id = none_i32; break;
            case 4: c.tile = none_u32; break;
            default: c.stages = none_u32; break;
        }
        CAPTURE(which);
        const char* why = lt_candidate_problem(c, kFilter);
        REQUIRE(why != nullptr);
        CHECK(std::strstr(why, "query failed") != nullptr);
    }
}

TEST_CASE("split K, workspace reduction, narrow inputs, a failed result and too much workspace are rejected") {
    LtCandidate c = good();
    c.splitk = 2;
    CHECK(lt_candidate_problem(c, kFilter) != nullptr);
    c = good();
    c.reduction = 1;
    CHECK(lt_candidate_problem(c, kFilter) != nullptr);
    c = good();
    c.impl_flags = kTf32 | 1;
    CHECK(lt_candidate_problem(c, kFilter) != nullptr);
    c = good();
    c.impl_flags = 1;  // a flag that is not a narrow input
    CHECK(lt_candidate_problem(c, kFilter) == nullptr);
    c = good();
    c.heuristic_ok = false;
    CHECK(lt_candidate_problem(c, kFilter) != nullptr);
    c = good();
    c.workspace = kFilter.workspace_bytes + 1;
    CHECK(lt_candidate_problem(c, kFilter) != nullptr);
}
