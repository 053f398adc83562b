// engine/cuda/lt_candidate.hpp: the cuBLASLt candidate filter of LtMatmuls, without a GPU. A
// candidate whose configuration or capability query fails must be rejected, not read as zeros
// (zero flags and a zero reduction scheme are what the filter passes).
#include "engine/cuda/lt_candidate.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

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

// ---- the choice over the heuristic's answers, and the product's way on where nothing passes ----

using revgraph::cuda::choose_lt_candidate;
using revgraph::cuda::LtQuery;
using revgraph::cuda::product_path;
using revgraph::cuda::ProductPath;

namespace {
LtCandidate with(int which) {  // a candidate refused for one reason
    LtCandidate c = good();
    switch (which) {
        case 0: c.splitk = 4; break;
        case 1: c.impl_flags = kTf32; break;
        case 2: c.workspace = kFilter.workspace_bytes * 2; break;
        default: c.reduction = 2; break;
    }
    return c;
}
}  // namespace

TEST_CASE("the first passing candidate is pinned: PEDANTIC's before 32F's, the heuristic's ranking within") {
    const std::vector<LtQuery> both{{"PEDANTIC", 0, {with(0), good(), good()}}, {"32F", 0, {good()}}};
    auto c = choose_lt_candidate(both, kFilter);
    CHECK(c.pinned());
    CHECK(c.query == 0);
    CHECK(c.candidate == 1);
    CHECK(c.why_none.empty());
    const std::vector<LtQuery> only_32f{{"PEDANTIC", 0, {with(0), with(1)}}, {"32F", 0, {with(2), good()}}};
    c = choose_lt_candidate(only_32f, kFilter);
    CHECK(c.query == 1);
    CHECK(c.candidate == 1);
    const std::vector<LtQuery> failed_pedantic{{"PEDANTIC", 15, {}}, {"32F", 0, {good()}}};
    c = choose_lt_candidate(failed_pedantic, kFilter);
    CHECK(c.query == 1);
    CHECK(c.candidate == 0);
}

TEST_CASE("none passing says why in one line: each compute type's status or its refusals counted") {
    const std::vector<LtQuery> none{{"CUBLAS_COMPUTE_32F_PEDANTIC", 0, {with(0), with(0), with(1)}},
                                    {"CUBLAS_COMPUTE_32F", 15, {}}};
    const auto c = choose_lt_candidate(none, kFilter);
    CHECK_FALSE(c.pinned());
    CHECK(c.candidate == -1);
    CHECK(c.why_none ==
          "CUBLAS_COMPUTE_32F_PEDANTIC: 3 candidates, none deterministic FP32 (1 inputs narrower than FP32, 2 splits "
          "K); CUBLAS_COMPUTE_32F: heuristic status 15");
    CHECK(c.why_none.find('\n') == std::string::npos);
    const std::vector<LtQuery> empty{{"CUBLAS_COMPUTE_32F_PEDANTIC", 0, {}}};
    CHECK(choose_lt_candidate(empty, kFilter).why_none == "CUBLAS_COMPUTE_32F_PEDANTIC: no candidates");
    CHECK_FALSE(choose_lt_candidate({}, kFilter).pinned());
    // A failed query is refused like any other reason, never pinned as zeros.
    LtCandidate unknown = good();
    unknown.impl_flags.reset();
    const auto q = choose_lt_candidate({{"X", 0, {unknown, with(3)}}}, kFilter);
    CHECK_FALSE(q.pinned());
    CHECK(q.why_none ==
          "X: 2 candidates, none deterministic FP32 (1 a configuration or capability query failed, 1 reduces "
          "through the workspace)");
}

TEST_CASE("a product cuBLASLt cannot pin runs one by one where each single can, else on the hand-written kernel") {
    CHECK(product_path(true, 1, false) == ProductPath::lt);
    CHECK(product_path(true, 4, false) == ProductPath::lt);
    CHECK(product_path(false, 4, true) == ProductPath::lt_each);
    CHECK(product_path(false, 4, false) == ProductPath::hand_kernel);
    CHECK(product_path(false, 1, true) == ProductPath::hand_kernel);  // a single has no singles to fall back to
    CHECK(product_path(false, 1, false) == ProductPath::hand_kernel);
    CHECK(std::string(revgraph::cuda::product_path_name(ProductPath::hand_kernel)) == "the hand-written kernel");
}
