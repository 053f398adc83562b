#pragma once
// The model's matrix products as cuBLASLt (column-major BLAS) is asked for them. Every 2-D array is
// row-major in memory, and a row-major R x C array with leading dimension L *is* a column-major
// C x R matrix with leading dimension L, its transpose: so the halves of the 82-wide state are used
// in place (the right half is the column-major 41 x rows matrix at offset 41, ld 82).
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/model/layout.hpp"

namespace revgraph::cuda {

// Column-major BLAS: D (m x n, ld ldd) = alpha * op(A) op(B). op(A) is m x k: A is stored m x k
// (lda >= m) or, transposed, k x m (lda >= k); same for B. There is never a beta and never a bias
// epilogue: every product writes its output fresh, and additions happen in the small elementwise
// kernels that follow, in the reference's rounding order. With batch > 1 it is a strided batch:
// product i reads A + i*stride_a, B + i*stride_b and writes D + i*stride_d (elements).
struct GemmSpec {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    int lda = 0, ldb = 0, ldd = 0;
    float alpha = 1.0f;
    int batch = 1;
    std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;

    int a_rows() const { return trans_a ? k : m; }
    int a_cols() const { return trans_a ? m : k; }
    int b_rows() const { return trans_b ? n : k; }
    int b_cols() const { return trans_b ? k : n; }
    // Elements spanned from the first element of each operand (for bounds checks).
    std::size_t a_extent() const;
    std::size_t b_extent() const;
    std::size_t d_extent() const;
    std::string describe() const;  // "T N m=41 n=128 k=41 lda=41 ldb=41 ldd=41"
    void validate() const;         // leading dimensions >= rows, batch outputs apart; throws Error
};

// Elements a rows x cols column-major matrix with leading dimension ld spans from its first element.
std::size_t matrix_span(int rows, int cols, int ld);

// The six products of the model. Row-major meaning first; then what cuBLASLt is given, where
// "W'" is a row-major buffer read column-major (so W' = Wᵀ) and every output is the column-major
// view of the row-major result (D' = Dᵀ, ld = the row length). Written for rev88's half width 41
// and width 82; h (default 41) gives the same products at any width 2h: 41 reads h, 82 reads 2h.
// branch(rows x 41) = relu(x)(rows x 41) W(41x41)ᵀ        branch' = op_T(W' 41x41 ld 41) · act'(41 x rows, ld 41)
GemmSpec couple_gemm(int rows, int h = model::kHalf);
// dW_i(41x41) = alpha g_i(rows x 41)ᵀ relu(x_i)(rows x 41) for every branch i at once (a strided
// batch over the backward's slots; dW_i lands at grads + i*1681, weights.i's place in the Layout)
//                                                         dW_i' = alpha act_i'(41 x rows) · op_T(g_i' 41 x rows)
GemmSpec branch_grads_gemm(int rows, float alpha, int branches, std::int64_t slot_stride, int h = model::kHalf);
// dtmp(rows x 41) = alpha g(rows x 41, ld 82) W(41x41)     dtmp' = alpha W'(41x41 ld 41) · g'(41 x rows, ld 82)
GemmSpec input_grad_gemm(int rows, float alpha, int h = model::kHalf);
// scores(rows x 10) = state(rows x 82) H(10x82)ᵀ (the bias is added by the loss/argmax kernel)
//                                                         scores' = op_T(H' 82x10 ld 82) · state'(82 x rows, ld 82)
GemmSpec head_forward_gemm(int rows, int h = model::kHalf);
// dH(10x82) = dscores(rows x 10)ᵀ state(rows x 82)         dH' = state'(82 x rows, ld 82) · op_T(dscores' 10 x rows, ld
// 10)
GemmSpec head_weight_grad_gemm(int rows, int h = model::kHalf);
// dstate(rows x 82) = dscores(rows x 10) H(10x82)          dstate' = H'(82x10 ld 82) · dscores'(10 x rows, ld 10)
GemmSpec head_input_grad_gemm(int rows, int h = model::kHalf);

}  // namespace revgraph::cuda
