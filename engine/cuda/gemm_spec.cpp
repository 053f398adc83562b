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

GemmSpec couple_gemm(int rows, int h) {
    GemmSpec s;
    s.trans_a = true;  // W' (col-major Wᵀ) transposed back: W
    s.m = h, s.n = rows, s.k = h;
    s.lda = h, s.ldb = h, s.ldd = h;
    return s;
}

GemmSpec branch_grads_gemm(int rows, float alpha, int branches, std::int64_t slot_stride, int h) {
    GemmSpec s;
    s.trans_b = true;  // g_i' (h x rows, ld h) transposed: g_i
    s.m = h, s.n = h, s.k = rows;
    s.lda = h, s.ldb = h, s.ldd = h;
    s.alpha = alpha;
    s.batch = branches;
    s.stride_a = slot_stride, s.stride_b = slot_stride;
    s.stride_d = static_cast<std::int64_t>(h) * h;  // weights.i's size
    return s;
}

GemmSpec input_grad_gemm(int rows, float alpha, int h) {
    GemmSpec s;
    s.m = h, s.n = rows, s.k = h;
    s.lda = h, s.ldb = 2 * h, s.ldd = h;
    s.alpha = alpha;
    return s;
}

GemmSpec head_forward_gemm(int rows, int h) {
    GemmSpec s;
    s.trans_a = true;  // H' (2h x 10, ld 2h) transposed: H
    s.m = kClasses, s.n = rows, s.k = 2 * h;
    s.lda = 2 * h, s.ldb = 2 * h, s.ldd = kClasses;
    return s;
}

GemmSpec head_weight_grad_gemm(int rows, int h) {
    GemmSpec s;
    s.trans_b = true;  // dscores' (10 x rows, ld 10) transposed: dscores
    s.m = 2 * h, s.n = kClasses, s.k = rows;
    s.lda = 2 * h, s.ldb = kClasses, s.ldd = 2 * h;
    return s;
}

GemmSpec head_input_grad_gemm(int rows, int h) {
    GemmSpec s;
    s.m = 2 * h, s.n = rows, s.k = kClasses;
    s.lda = 2 * h, s.ldb = kClasses, s.ldd = 2 * h;
    return s;
}

}  // namespace revgraph::cuda
