#include "engine/cuda/lt_matmul.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "engine/cuda_util/check.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/cuda/lt_candidate.hpp"
#include "engine/cuda/ops/gemm.hpp"
#include "engine/error.hpp"

namespace revgraph::cuda {

std::uint32_t pointer_alignment(const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t a = 256;
    while (a > 1 && address % a != 0) a /= 2;
    return a;
}

struct LtMatmuls::Shape {
    GemmSpec spec;
    std::uint32_t align_a = 0, align_b = 0, align_d = 0;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    std::size_t workspace = 0;
    std::int32_t algo_id = -1, splitk = 1;
    std::uint32_t tile = 0, stages = 0, reduction = 0;
    std::uint64_t impl_flags = 0;
    int uses = 0;

    ~Shape() {
        if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
        if (a != nullptr) (void)cublasLtMatrixLayoutDestroy(a);
        if (b != nullptr) (void)cublasLtMatrixLayoutDestroy(b);
        if (d != nullptr) (void)cublasLtMatrixLayoutDestroy(d);
    }
};

namespace {

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}
template <typename T>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}
// One algorithm-configuration attribute, or nothing where cuBLASLt could not say.
template <typename T>
std::optional<T> algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    T value{};
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) != CUBLAS_STATUS_SUCCESS ||
        written != sizeof(value))
        return std::nullopt;
    return value;
}

// The candidate's numerical implementation flags, or nothing where the query failed.
std::optional<std::uint64_t> impl_flags(const cublasLtMatmulAlgo_t& algo) {
    std::uint64_t flags = 0;
    std::size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags, sizeof(flags),
                                          &written) != CUBLAS_STATUS_SUCCESS ||
        written != sizeof(flags))
        return std::nullopt;
    return flags;
}

// Inputs in anything narrower than FP32 (TF32, half, bf16, 8-bit) would change the model's numbers.
constexpr std::uint64_t kReducedInputs =
    CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF |
    CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8I |
    CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E4M3 | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E5M2;

const char* compute_name(cublasComputeType_t c) {
    return c == CUBLAS_COMPUTE_32F_PEDANTIC ? "CUBLAS_COMPUTE_32F_PEDANTIC" : "CUBLAS_COMPUTE_32F";
}

}  // namespace

LtMatmuls::LtMatmuls(void* workspace, std::size_t workspace_bytes, bool force_hand_kernel)
    : workspace_(workspace), workspace_bytes_(workspace_bytes), force_hand_kernel_(force_hand_kernel) {
    cublasCheck(cublasLtCreate(&handle_));
}

LtMatmuls::~LtMatmuls() {
    shapes_.clear();
    if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
}

namespace {
// Alignment every product of a strided batch shares: of the first operand and of the stride.
std::uint32_t batch_alignment(const float* p, int batch, std::int64_t stride) {
    std::uint32_t a = pointer_alignment(p);
    if (batch > 1) {
        const auto stride_bytes = static_cast<std::uintptr_t>(stride) * sizeof(float);
        a = std::min(a, pointer_alignment(reinterpret_cast<const void*>(stride_bytes)));
    }
    return a;
}
}  // namespace

int LtMatmuls::shape_for(const GemmSpec& spec, const float* a, const float* b, const float* d, std::string* why_not) {
    spec.validate();
    const std::uint32_t aa = batch_alignment(a, spec.batch, spec.stride_a),
                        ab = batch_alignment(b, spec.batch, spec.stride_b),
                        ad = batch_alignment(d, spec.batch, spec.stride_d);
    const std::string key =
        spec.describe() + " align " + std::to_string(aa) + "/" + std::to_string(ab) + "/" + std::to_string(ad);
    if (const auto it = shape_index_.find(key); it != shape_index_.end()) return it->second;
    if (const auto it = unpinned_.find(key); it != unpinned_.end()) {  // asked once per shape, not per call site
        if (why_not != nullptr) *why_not = it->second;
        return -1;
    }

    auto s = std::make_unique<Shape>();
    s->spec = spec;
    s->align_a = aa, s->align_b = ab, s->align_d = ad;
    // Column-major layouts exactly as GemmSpec describes them (engine/cuda/program.hpp).
    cublasCheck(cublasLtMatrixLayoutCreate(&s->a, CUDA_R_32F, static_cast<std::uint64_t>(spec.a_rows()),
                                           static_cast<std::uint64_t>(spec.a_cols()), spec.lda));
    cublasCheck(cublasLtMatrixLayoutCreate(&s->b, CUDA_R_32F, static_cast<std::uint64_t>(spec.b_rows()),
                                           static_cast<std::uint64_t>(spec.b_cols()), spec.ldb));
    cublasCheck(cublasLtMatrixLayoutCreate(&s->d, CUDA_R_32F, static_cast<std::uint64_t>(spec.m),
                                           static_cast<std::uint64_t>(spec.n), spec.ldd));
    if (spec.batch > 1) {
        const auto batched = [&](cublasLtMatrixLayout_t layout, std::int64_t stride) {
            const std::int32_t count = spec.batch;
            cublasCheck(
                cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
            cublasCheck(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof(stride)));
        };
        batched(s->a, spec.stride_a);
        batched(s->b, spec.stride_b);
        batched(s->d, spec.stride_d);  // also C's layout: C is given as D
    }

    // Ask the heuristic under each compute type (PEDANTIC first), keep every answer, then choose
    // with the plain logic of lt_candidate.hpp (tested without a GPU).
    constexpr cublasComputeType_t kComputes[] = {CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F};
    std::vector<LtQuery> queries;
    std::vector<std::vector<cublasLtMatmulAlgo_t>> algos;
    std::vector<cublasLtMatmulDesc_t> descs;
    const auto destroy_descs = [&](cublasLtMatmulDesc_t keep) {
        for (auto d : descs)
            if (d != nullptr && d != keep) (void)cublasLtMatmulDescDestroy(d);
        descs.clear();
    };
    try {
        for (const cublasComputeType_t compute : kComputes) {
            cublasLtMatmulDesc_t desc = nullptr;
            cublasCheck(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
            descs.push_back(desc);
            set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                     static_cast<std::int32_t>(spec.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
            set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                     static_cast<std::int32_t>(spec.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
            cublasLtMatmulPreference_t pref = nullptr;
            cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
            cublasLtMatmulHeuristicResult_t results[16] = {};
            int found = 0;
            cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
            try {
                set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(workspace_bytes_));
                // No split-K of any kind: partial sums reduced in place through atomics or in a
                // workspace pass would make the summation order depend on the algorithm's schedule.
                set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                         static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE));
                // The real alignments: halves of the 82-wide state start 164 bytes in, gradients of
                // branch weights 6724·i bytes in; cuBLASLt assumes 256 unless told.
                set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, aa);
                set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, ab);
                set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, ad);
                set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, ad);
                status =
                    cublasLtMatmulAlgoGetHeuristic(handle_, desc, s->a, s->b, s->d, s->d, pref, 16, results, &found);
            } catch (...) {
                (void)cublasLtMatmulPreferenceDestroy(pref);
                throw;
            }
            (void)cublasLtMatmulPreferenceDestroy(pref);
            LtQuery q;
            q.compute = compute_name(compute);
            q.status = static_cast<int>(status);
            algos.emplace_back();
            for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
                const auto& r = results[i];
                LtCandidate c;
                c.heuristic_ok = r.state == CUBLAS_STATUS_SUCCESS;
                c.workspace = r.workspaceSize;
                c.splitk = algo_config<std::int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
                c.reduction = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
                c.algo_id = algo_config<std::int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_ID);
                c.tile = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
                c.stages = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
                c.impl_flags = impl_flags(r.algo);
                q.candidates.push_back(c);
                algos.back().push_back(r.algo);
            }
            queries.push_back(std::move(q));
        }
    } catch (...) {
        destroy_descs(nullptr);
        throw;
    }
    const LtFilter filter{workspace_bytes_, static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE), kReducedInputs};
    const LtChoice choice = force_hand_kernel_ ? LtChoice{-1, -1, "the hand-written kernel was asked for"}
                                               : choose_lt_candidate(queries, filter);
    if (!choice.pinned()) {
        destroy_descs(nullptr);
        const std::string why = "gemm " + key + ": " + choice.why_none;
        unpinned_.emplace(key, why);
        if (why_not != nullptr) *why_not = why;
        return -1;
    }
    const auto q = static_cast<std::size_t>(choice.query), i = static_cast<std::size_t>(choice.candidate);
    const LtCandidate& c = queries[q].candidates[i];
    s->algo = algos[q][i];
    s->workspace = c.workspace;
    s->splitk = *c.splitk;
    s->reduction = *c.reduction;
    s->impl_flags = *c.impl_flags;
    s->algo_id = *c.algo_id;
    s->tile = *c.tile;
    s->stages = *c.stages;
    s->compute = kComputes[q];
    s->desc = descs[q];
    destroy_descs(s->desc);
    shapes_.push_back(std::move(s));
    const int id = static_cast<int>(shapes_.size()) - 1;
    shape_index_.emplace(key, id);
    return id;
}

int LtMatmuls::bind(const GemmSpec& spec, const float* a, const float* b, float* d) {
    char pointers[96];
    std::snprintf(pointers, sizeof pointers, " alpha %a at %p %p %p", static_cast<double>(spec.alpha),
                  static_cast<const void*>(a), static_cast<const void*>(b), static_cast<const void*>(d));
    const std::string site = spec.describe() + pointers;
    if (const auto it = site_index_.find(site); it != site_index_.end()) return it->second;
    const int first = static_cast<int>(calls_.size());
    const auto add_call = [&](int shape, const GemmSpec& s, const float* pa, const float* pb, float* pd) {
        Bound call;
        call.shape = shape;
        call.spec = s;
        call.a = pa, call.b = pb, call.d = pd;
        call.alpha = s.alpha;
        if (shape >= 0) ++shapes_[static_cast<std::size_t>(shape)]->uses;
        calls_.push_back(call);
    };
    std::string why_whole;
    const int whole = shape_for(spec, a, b, d, &why_whole);
    std::vector<int> singles;
    std::string why_single;
    GemmSpec one = spec;  // the same product, one at a time
    one.batch = 1;
    one.stride_a = one.stride_b = one.stride_d = 0;
    if (whole < 0 && spec.batch > 1) {
        for (int i = 0; i < spec.batch && why_single.empty(); ++i)
            singles.push_back(
                shape_for(one, a + i * spec.stride_a, b + i * spec.stride_b, d + i * spec.stride_d, &why_single));
    }
    const ProductPath path = product_path(whole >= 0, spec.batch, spec.batch > 1 && why_single.empty());
    switch (path) {
        case ProductPath::lt: add_call(whole, spec, a, b, d); break;
        case ProductPath::lt_each:
            for (int i = 0; i < spec.batch; ++i)
                add_call(singles[static_cast<std::size_t>(i)], one, a + i * spec.stride_a, b + i * spec.stride_b,
                         d + i * spec.stride_d);
            ++split_batches_;
            break;
        case ProductPath::hand_kernel:
            add_call(-1, spec, a, b, d);
            // One line: the product, why cuBLASLt pinned nothing for it, and the way on.
            hand_kernel_.push_back(why_whole + (why_single.empty() ? "" : "; one at a time: " + why_single) +
                                   " -> runs on " + product_path_name(path));
            break;
    }
    bound_.emplace_back(first, static_cast<int>(calls_.size()) - first);
    site_index_.emplace(site, static_cast<int>(bound_.size()) - 1);
    return static_cast<int>(bound_.size()) - 1;
}

void LtMatmuls::launch(int id, cudaStream_t stream, bool side) const {
    if (side && !side_lane_) throw Error("cuda: a product on the second stream without its workspace");
    void* const workspace = side ? side_workspace_ : workspace_;
    const auto [first, count] = bound_.at(static_cast<std::size_t>(id));
    for (int k = first; k < first + count; ++k) {
        const Bound& b = calls_[static_cast<std::size_t>(k)];
        if (b.shape < 0) {  // deterministic by construction: k in index order, no atomics
            ops::launch(ops::GemmArgs{b.spec, b.a, b.b, b.d}, stream);
            continue;
        }
        const Shape& s = *shapes_[static_cast<std::size_t>(b.shape)];
        // beta = 0: C is not read; it is given as D because cuBLASLt wants a C with D's layout.
        NVTX_RANGE("gemm (cuBLASLt)");
        cublasCheck(cublasLtMatmul(handle_, s.desc, &b.alpha, b.a, s.a, b.b, s.b, &b.beta, b.d, s.d, b.d, s.d, &s.algo,
                                   workspace, workspace_bytes_, stream));
    }
}

nlohmann::ordered_json LtMatmuls::describe() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& s : shapes_) {
        nlohmann::ordered_json j;
        j["shape"] = s->spec.describe();
        j["alignment_bytes"] = {s->align_a, s->align_b, s->align_d};
        j["compute_type"] = compute_name(s->compute);
        j["algo_id"] = s->algo_id;
        j["tile_id"] = s->tile;
        j["stages_id"] = s->stages;
        j["splitk"] = s->splitk;
        j["reduction_scheme"] = s->reduction;
        j["numerical_impl_flags"] = s->impl_flags;
        j["workspace_bytes"] = s->workspace;
        j["call_sites"] = s->uses;
        out.push_back(j);
    }
    return out;
}

}  // namespace revgraph::cuda
