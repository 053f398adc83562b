#include "engine/cuda/gemm_spec.hpp"

#include "engine/error.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cuda {

using model::kClasses;
using model::kFeatures;
using model::kHalf;

std::size_t matrix_span(int rows, int cols, int ld) {
    if (rows <= 0 || cols <= 0) return 0;
    return static_cast<std::size_t>(cols - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(rows);
}

namespace {
std::size_t batched(std::size_t one, int batch, std::int64_t stride) {
    return one == 0 ? 0 : static_cast<std::size_t>(batch - 1) * static_cast<std::size_t>(stride) + one;
}
}  // namespace

std::size_t GemmSpec::a_extent() const { return batched(matrix_span(a_rows(), a_cols(), lda), batch, stride_a); }
std::size_t GemmSpec::b_extent() const { return batched(matrix_span(b_rows(), b_cols(), ldb), batch, stride_b); }
std::size_t GemmSpec::d_extent() const { return batched(matrix_span(m, n, ldd), batch, stride_d); }

std::string GemmSpec::describe() const {
    std::string s;
    s += trans_a ? "T " : "N ";
    s += trans_b ? "T" : "N";
    s += " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
    s += " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldd=" + std::to_string(ldd);
    if (batch > 1)
        s += " batch=" + std::to_string(batch) + " strides=" + std::to_string(stride_a) + "/" +
             std::to_string(stride_b) + "/" + std::to_string(stride_d);
    return s;
}

void GemmSpec::validate() const {
    if (m < 1 || n < 1 || k < 1) throw Error("plan: empty matrix product " + describe());
    if (lda < a_rows() || ldb < b_rows() || ldd < m)
        throw Error("plan: leading dimension below the row count in " + describe());
    if (batch < 1) throw Error("plan: batch below 1 in " + describe());
    if (batch > 1 && (stride_a < 0 || stride_b < 0 ||
                      static_cast<std::size_t>(stride_d) < matrix_span(m, n, ldd)))  // outputs must not overlap
        throw Error("plan: batch strides overlap in " + describe());
}

GemmSpec couple_gemm(int rows) {
    GemmSpec s;
    s.trans_a = true;  // W' (col-major Wᵀ) transposed back: W
    s.m = kHalf, s.n = rows, s.k = kHalf;
    s.lda = kHalf, s.ldb = kHalf, s.ldd = kHalf;
    return s;
}

GemmSpec branch_grads_gemm(int rows, float alpha, int branches, std::int64_t slot_stride) {
    GemmSpec s;
    s.trans_b = true;  // g_i' (41 x rows, ld 41) transposed: g_i
    s.m = kHalf, s.n = kHalf, s.k = rows;
    s.lda = kHalf, s.ldb = kHalf, s.ldd = kHalf;
    s.alpha = alpha;
    s.batch = branches;
    s.stride_a = slot_stride, s.stride_b = slot_stride;
    s.stride_d = static_cast<std::int64_t>(model::kBranchSize);
    return s;
}

GemmSpec input_grad_gemm(int rows, float alpha) {
    GemmSpec s;
    s.m = kHalf, s.n = rows, s.k = kHalf;
    s.lda = kHalf, s.ldb = kFeatures, s.ldd = kHalf;
    s.alpha = alpha;
    return s;
}

GemmSpec head_forward_gemm(int rows) {
    GemmSpec s;
    s.trans_a = true;  // H' (82 x 10, ld 82) transposed: H
    s.m = kClasses, s.n = rows, s.k = kFeatures;
    s.lda = kFeatures, s.ldb = kFeatures, s.ldd = kClasses;
    return s;
}

GemmSpec head_weight_grad_gemm(int rows) {
    GemmSpec s;
    s.trans_b = true;  // dscores' (10 x rows, ld 10) transposed: dscores
    s.m = kFeatures, s.n = kClasses, s.k = rows;
    s.lda = kFeatures, s.ldb = kClasses, s.ldd = kFeatures;
    return s;
}

GemmSpec head_input_grad_gemm(int rows) {
    GemmSpec s;
    s.m = kFeatures, s.n = rows, s.k = kClasses;
    s.lda = kFeatures, s.ldb = kClasses, s.ldd = kFeatures;
    return s;
}

}  // namespace revgraph::cuda
