#include "engine/cuda/program.hpp"

#include <algorithm>
#include <set>

#include "engine/error.hpp"

namespace revgraph::cuda {

using model::kClasses;
using model::kFeatures;
using model::kHalf;
using model::kPixels;

std::vector<Batch> epoch_batches(std::int64_t n, int batch_size) {
    if (n < 1) throw Error("plan: no training examples");
    if (batch_size < 1) throw Error("plan: batch_size must be >= 1");
    std::vector<Batch> out;
    for (std::int64_t first = 0; first < n; first += batch_size)
        out.push_back({first, static_cast<int>(std::min<std::int64_t>(batch_size, n - first))});
    return out;
}

const char* buf_name(Buf b) {
    switch (b) {
        case Buf::params: return "params";
        case Buf::grads: return "grads";
        case Buf::velocity: return "velocity";
        case Buf::initial: return "initial";
        case Buf::train_raw: return "train_raw";
        case Buf::query_raw: return "query_raw";
        case Buf::train_rows: return "train_rows";
        case Buf::query_rows: return "query_rows";
        case Buf::train_labels: return "train_labels";
        case Buf::permutations: return "permutations";
        case Buf::order: return "order";
        case Buf::state: return "state";
        case Buf::dstate: return "dstate";
        case Buf::act_left: return "act_left";
        case Buf::act_right: return "act_right";
        case Buf::branch: return "branch";
        case Buf::dtmp: return "dtmp";
        case Buf::scores: return "scores";
        case Buf::dscores: return "dscores";
        case Buf::batch_labels: return "batch_labels";
        case Buf::query_state: return "query_state";
        case Buf::query_act_left: return "query_act_left";
        case Buf::query_act_right: return "query_act_right";
        case Buf::query_branch: return "query_branch";
        case Buf::query_scores: return "query_scores";
        case Buf::predictions: return "predictions";
        case Buf::count: break;
    }
    return "?";
}

Elem buf_elem(Buf b) {
    switch (b) {
        case Buf::train_labels:
        case Buf::permutations:
        case Buf::order:
        case Buf::batch_labels: return Elem::i32;
        case Buf::predictions: return Elem::i64;
        default: return Elem::f32;
    }
}

std::size_t elem_bytes(Elem e) { return e == Elem::i64 ? 8 : 4; }

// ---- products ----------------------------------------------------------------------------------

namespace {
std::size_t span(int rows, int cols, int ld) {
    if (rows <= 0 || cols <= 0) return 0;
    return static_cast<std::size_t>(cols - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(rows);
}
}  // namespace

std::size_t GemmSpec::a_extent() const { return span(a_rows(), a_cols(), lda); }
std::size_t GemmSpec::b_extent() const { return span(b_rows(), b_cols(), ldb); }
std::size_t GemmSpec::d_extent() const { return span(m, n, ldd); }

std::string GemmSpec::describe() const {
    std::string s;
    s += trans_a ? "T " : "N ";
    s += trans_b ? "T" : "N";
    s += " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
    s += " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldd=" + std::to_string(ldd);
    if (bias) s += " +bias";
    return s;
}

void GemmSpec::validate() const {
    if (m < 1 || n < 1 || k < 1) throw Error("plan: empty matrix product " + describe());
    if (lda < a_rows() || ldb < b_rows() || ldd < m)
        throw Error("plan: leading dimension below the row count in " + describe());
}

GemmSpec couple_gemm(int rows) {
    GemmSpec s;
    s.trans_a = true;  // W' (col-major Wᵀ) transposed back: W
    s.m = kHalf, s.n = rows, s.k = kHalf;
    s.lda = kHalf, s.ldb = kHalf, s.ldd = kHalf;
    return s;
}

GemmSpec weight_grad_gemm(int rows, float alpha) {
    GemmSpec s;
    s.trans_b = true;  // g' (41 x rows, ld 82) transposed: g
    s.m = kHalf, s.n = kHalf, s.k = rows;
    s.lda = kHalf, s.ldb = kFeatures, s.ldd = kHalf;
    s.alpha = alpha;
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
    s.bias = true;
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

// ---- operations --------------------------------------------------------------------------------

namespace {
template <class... F>
struct overloaded : F... {
    using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

// A half of a rows x 82 state, from its first element.
std::size_t half_extent(int rows) { return span(kHalf, rows, kFeatures); }
std::size_t n41(int rows) { return static_cast<std::size_t>(rows) * kHalf; }
std::size_t n82(std::int64_t rows) { return static_cast<std::size_t>(rows) * kFeatures; }
}  // namespace

const char* op_name(const Op& op) {
    return std::visit(overloaded{
                          [](const GemmOp&) { return "gemm"; },
                          [](const CopyOp&) { return "copy"; },
                          [](const ZeroOp&) { return "zero"; },
                          [](const LiftOp&) { return "lift"; },
                          [](const GatherOp&) { return "gather"; },
                          [](const CoupleOp& c) { return c.masked ? "couple_masked" : "couple"; },
                          [](const MaskOp&) { return "mask"; },
                          [](const LossOp&) { return "loss"; },
                          [](const SgdOp&) { return "sgd"; },
                          [](const ArgmaxOp&) { return "argmax"; },
                      },
                      op);
}

OpCounts count_ops(const Program& p) {
    OpCounts c;
    for (const auto& op : p) {
        if (std::holds_alternative<GemmOp>(op)) ++c.gemms;
        else if (std::holds_alternative<CopyOp>(op) || std::holds_alternative<ZeroOp>(op)) ++c.copies;
        else ++c.kernels;
    }
    return c;
}

std::vector<Access> accesses(const Op& op, std::size_t gather_source_rows) {
    using E = Elem;
    return std::visit(
        overloaded{
            [](const GemmOp& g) {
                std::vector<Access> a{{g.a, g.spec.a_extent(), E::f32}, {g.b, g.spec.b_extent(), E::f32},
                                      {g.d, g.spec.d_extent(), E::f32}};
                if (g.spec.bias) a.push_back({g.bias, static_cast<std::size_t>(g.spec.m), E::f32});
                return a;
            },
            [](const CopyOp& c) {
                return std::vector<Access>{{c.dst, c.count, buf_elem(c.dst.buf)}, {c.src, c.count, buf_elem(c.dst.buf)}};
            },
            [](const ZeroOp& z) { return std::vector<Access>{{z.dst, z.count, buf_elem(z.dst.buf)}}; },
            [](const LiftOp& l) {
                return std::vector<Access>{{l.train_raw, static_cast<std::size_t>(l.train_count) * kPixels, E::f32},
                                           {l.train_rows, n82(l.train_count), E::f32},
                                           {l.query_raw, static_cast<std::size_t>(l.query_count) * kPixels, E::f32},
                                           {l.query_rows, n82(l.query_count), E::f32}};
            },
            [&](const GatherOp& g) {
                std::vector<Access> a{{g.src_rows, n82(static_cast<std::int64_t>(gather_source_rows)), E::f32},
                                      {g.state, n82(g.rows), E::f32},
                                      {g.act_right, n41(g.rows), E::f32}};
                if (!g.identity) a.push_back({g.order, static_cast<std::size_t>(g.first) + g.rows, E::i32});
                if (g.with_labels) {
                    a.push_back({g.src_labels, gather_source_rows, E::i32});
                    a.push_back({g.labels, static_cast<std::size_t>(g.rows), E::i32});
                }
                return a;
            },
            [](const CoupleOp& c) {
                std::vector<Access> a{{c.half, half_extent(c.rows), E::f32},
                                      {c.branch, n41(c.rows), E::f32},
                                      {c.act, n41(c.rows), E::f32}};
                if (c.masked) {
                    a.push_back({c.dhalf, half_extent(c.rows), E::f32});
                    a.push_back({c.dtmp, n41(c.rows), E::f32});
                }
                return a;
            },
            [](const MaskOp& m) {
                return std::vector<Access>{{m.dhalf, half_extent(m.rows), E::f32},
                                           {m.dtmp, n41(m.rows), E::f32},
                                           {m.half, half_extent(m.rows), E::f32}};
            },
            [](const LossOp& l) {
                const std::size_t s = static_cast<std::size_t>(l.rows) * kClasses;
                return std::vector<Access>{{l.scores, s, E::f32},
                                           {l.labels, static_cast<std::size_t>(l.rows), E::i32},
                                           {l.dscores, s, E::f32},
                                           {l.dbias, static_cast<std::size_t>(kClasses), E::f32},
                                           {l.state, half_extent(l.rows), E::f32},
                                           {l.act_left, n41(l.rows), E::f32}};
            },
            [](const SgdOp& s) {
                return std::vector<Access>{{s.params, s.count, E::f32}, {s.velocity, s.count, E::f32},
                                           {s.grads, s.count, E::f32}};
            },
            [](const ArgmaxOp& a) {
                return std::vector<Access>{{a.scores, static_cast<std::size_t>(a.rows) * kClasses, E::f32},
                                           {a.predictions, static_cast<std::size_t>(a.rows), E::i64}};
            },
        },
        op);
}

// ---- the plan ----------------------------------------------------------------------------------

TaskPlan::TaskPlan(const TaskConfig& config, std::int64_t train_count, std::int64_t test_count)
    : config_(config),
      layout_(config.depth),
      n_(train_count),
      q_(test_count),
      full_batch_(static_cast<int>(std::min<std::int64_t>(config.batch_size, train_count))),
      batches_(epoch_batches(train_count, config.batch_size)),
      alpha_(static_cast<float>(config.alpha)) {
    config_.validate();
    if (q_ < 1) throw Error("plan: no query examples");
    if (n_ > (std::int64_t(1) << 31) - 1 || q_ * kFeatures > (std::int64_t(1) << 31) - 1)
        throw Error("plan: too many examples for 32-bit indices");
}

std::vector<int> TaskPlan::distinct_rows() const {
    std::set<int> s;
    for (const auto& b : batches_) s.insert(b.rows);
    s.insert(static_cast<int>(q_));
    return {s.begin(), s.end()};
}

std::size_t TaskPlan::elements(Buf b) const {
    const std::size_t n = static_cast<std::size_t>(n_), q = static_cast<std::size_t>(q_),
                      bs = static_cast<std::size_t>(full_batch_);
    switch (b) {
        case Buf::params:
        case Buf::grads:
        case Buf::velocity:
        case Buf::initial: return layout_.total();
        case Buf::train_raw: return n * kPixels;
        case Buf::query_raw: return q * kPixels;
        case Buf::train_rows: return n * kFeatures;
        case Buf::query_rows: return q * kFeatures;
        case Buf::train_labels: return n;
        case Buf::permutations: return static_cast<std::size_t>(config_.epochs) * n;
        case Buf::order: return n;
        case Buf::state:
        case Buf::dstate: return bs * kFeatures;
        case Buf::act_left:
        case Buf::act_right:
        case Buf::branch:
        case Buf::dtmp: return bs * kHalf;
        case Buf::scores:
        case Buf::dscores: return bs * kClasses;
        case Buf::batch_labels: return bs;
        case Buf::query_state: return q * kFeatures;
        case Buf::query_act_left:
        case Buf::query_act_right:
        case Buf::query_branch: return q * kHalf;
        case Buf::query_scores: return q * kClasses;
        case Buf::predictions: return q;
        case Buf::count: break;
    }
    throw Error("plan: no such buffer");
}

Program TaskPlan::reset() const {
    const std::size_t total = layout_.total();
    return {CopyOp{{Buf::params}, {Buf::initial}, total}, ZeroOp{{Buf::velocity}, total},
            ZeroOp{{Buf::grads}, total}};
}

Program TaskPlan::normalize() const {
    return {LiftOp{{Buf::train_raw}, {Buf::train_rows}, n_, {Buf::query_raw}, {Buf::query_rows}, q_}};
}

Program TaskPlan::epoch_start(int e) const {
    if (e < 0 || e >= config_.epochs) throw Error("plan: no epoch " + std::to_string(e));
    return {CopyOp{{Buf::order}, {Buf::permutations, static_cast<std::size_t>(e) * static_cast<std::size_t>(n_)},
                   static_cast<std::size_t>(n_)}};
}

// SPEC §3 forward on `rows` states: for each block, a product and a coupling kernel per half. Each
// coupling kernel also materialises relu of the half it just updated, which is exactly the input the
// next product reads; the first relu (of the right half) comes from the gather.
void TaskPlan::core_forward(Program& p, int rows, Buf state, Buf act_left, Buf act_right, Buf branch) const {
    for (int k = 0; k < layout_.depth(); ++k) {
        // left += α·linear(relu(right), W_2k)
        p.push_back(GemmOp{couple_gemm(rows), {Buf::params, layout_.branch_offset(2 * k)}, {act_right}, {branch}, {}});
        p.push_back(CoupleOp{rows, {state, 0}, {branch}, {act_left}, 1.0f, alpha_, false, {}, {}});
        // right += α·linear(relu(left), W_2k+1)
        p.push_back(GemmOp{couple_gemm(rows), {Buf::params, layout_.branch_offset(2 * k + 1)}, {act_left}, {branch}, {}});
        p.push_back(CoupleOp{rows, {state, kHalf}, {branch}, {act_right}, 1.0f, alpha_, false, {}, {}});
    }
}

// One SGD step. Launch order (D = depth), with what is fused where:
//   gather (+relu of the right half)                                           1 kernel
//   per block: product, coupling(+relu), product, coupling(+relu)              2 products + 2 kernels
//   head product with the bias in the matmul epilogue                          1 product
//   loss: softmax-CE gradient + head-bias column sum + relu(left) of the state 1 kernel
//   head-weight gradient, head-input gradient                                  2 products
//   reconstructing backward, block k = D-1 .. 0 (SPEC §4):
//     a  branch = relu(l) W_Gᵀ                                                 product
//     b  r -= α·branch, act_r = relu(r); fused first: the previous block's
//        dr += dtmp ⊙ [r > 0] on r before the rebuild                          kernel
//     c  dW_G = α drᵀ relu(l)                                                  product
//     d  dtmp = α dr W_G                                                       product
//     e  branch = relu(r) W_Fᵀ        (k > 0 only)                             product
//     f  dl += dtmp ⊙ [l > 0] on l before the rebuild, then l -= α·branch,
//        act_l = relu(l)              (k = 0: the mask only)                   kernel
//     g  dW_F = α dlᵀ relu(r)                                                  product
//     h  dtmp = α dl W_F              (k > 0 only; masked into dr by the next block's b)  product
//   SGD with momentum and weight decay on every parameter                      1 kernel
// Block 0 skips e, h and the rebuild of l: they only serve the gradient of the core input and the
// input itself, which training never reads. Depth 2: 17 products + 11 kernels = 28 launches per step.
// The mask-multiply cannot go into a matmul epilogue (cuBLASLt's DRELU would mask the accumulated
// sum, not only the new product), and relu(input) cannot be a matmul prologue, so each lives in the
// small elementwise kernel that runs at that point anyway.
Program TaskPlan::step(int b) const {
    const Batch batch = batches_.at(static_cast<std::size_t>(b));
    const int rows = batch.rows;
    Program p;
    p.push_back(GatherOp{rows, false, {Buf::order}, batch.first, {Buf::train_rows}, {Buf::train_labels},
                         {Buf::state}, {Buf::act_right}, {Buf::batch_labels}, true});
    core_forward(p, rows, Buf::state, Buf::act_left, Buf::act_right, Buf::branch);
    const std::size_t hw = layout_.head_weight_offset(), hb = layout_.head_bias_offset();
    p.push_back(GemmOp{head_forward_gemm(rows), {Buf::params, hw}, {Buf::state}, {Buf::scores}, {Buf::params, hb}});
    p.push_back(LossOp{rows, {Buf::scores}, {Buf::batch_labels}, {Buf::dscores}, {Buf::grads, hb}, {Buf::state},
                       {Buf::act_left}});
    p.push_back(GemmOp{head_weight_grad_gemm(rows), {Buf::state}, {Buf::dscores}, {Buf::grads, hw}, {}});
    p.push_back(GemmOp{head_input_grad_gemm(rows), {Buf::params, hw}, {Buf::dscores}, {Buf::dstate}, {}});

    const Ref l{Buf::state, 0}, r{Buf::state, static_cast<std::size_t>(kHalf)};
    const Ref dl{Buf::dstate, 0}, dr{Buf::dstate, static_cast<std::size_t>(kHalf)};
    bool pending_dr_mask = false;  // an h product whose mask-multiply into dr is still to come
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        const Ref wf{Buf::params, layout_.branch_offset(2 * k)}, wg{Buf::params, layout_.branch_offset(2 * k + 1)};
        const Ref gf{Buf::grads, layout_.branch_offset(2 * k)}, gg{Buf::grads, layout_.branch_offset(2 * k + 1)};
        // G branch: rebuild r, then its gradients (input l, output gradient dr).
        p.push_back(GemmOp{couple_gemm(rows), wg, {Buf::act_left}, {Buf::branch}, {}});                    // a
        p.push_back(CoupleOp{rows, r, {Buf::branch}, {Buf::act_right}, -1.0f, alpha_, pending_dr_mask, dr,
                             {Buf::dtmp}});                                                                  // b
        p.push_back(GemmOp{weight_grad_gemm(rows, alpha_), {Buf::act_left}, dr, gg, {}});                   // c
        p.push_back(GemmOp{input_grad_gemm(rows, alpha_), wg, dr, {Buf::dtmp}, {}});                        // d
        // F branch: rebuild l, then its gradients (input r, output gradient dl).
        if (k > 0) {
            p.push_back(GemmOp{couple_gemm(rows), wf, {Buf::act_right}, {Buf::branch}, {}});                // e
            p.push_back(CoupleOp{rows, l, {Buf::branch}, {Buf::act_left}, -1.0f, alpha_, true, dl, {Buf::dtmp}});  // f
        } else {
            p.push_back(MaskOp{rows, dl, {Buf::dtmp}, l});                                                  // f
        }
        p.push_back(GemmOp{weight_grad_gemm(rows, alpha_), {Buf::act_right}, dl, gf, {}});                  // g
        if (k > 0) p.push_back(GemmOp{input_grad_gemm(rows, alpha_), wf, dl, {Buf::dtmp}, {}});             // h
        pending_dr_mask = k > 0;
    }
    p.push_back(SgdOp{layout_.total(), {Buf::params}, {Buf::velocity}, {Buf::grads},
                      static_cast<float>(config_.learning_rate), static_cast<float>(config_.momentum),
                      static_cast<float>(config_.weight_decay)});
    return p;
}

Program TaskPlan::epoch(int e) const {
    Program p = epoch_start(e);
    for (std::size_t b = 0; b < batches_.size(); ++b) {
        const Program s = step(static_cast<int>(b));
        p.insert(p.end(), s.begin(), s.end());
    }
    return p;
}

Program TaskPlan::predict() const {
    const int rows = static_cast<int>(q_);
    Program p;
    p.push_back(GatherOp{rows, true, {}, 0, {Buf::query_rows}, {}, {Buf::query_state}, {Buf::query_act_right}, {},
                         false});
    core_forward(p, rows, Buf::query_state, Buf::query_act_left, Buf::query_act_right, Buf::query_branch);
    p.push_back(GemmOp{head_forward_gemm(rows), {Buf::params, layout_.head_weight_offset()}, {Buf::query_state},
                       {Buf::query_scores}, {Buf::params, layout_.head_bias_offset()}});
    p.push_back(ArgmaxOp{q_, {Buf::query_scores}, {Buf::predictions}});
    return p;
}

void TaskPlan::check(const Program& p) const {
    for (std::size_t i = 0; i < p.size(); ++i) {
        const Op& op = p[i];
        if (const auto* g = std::get_if<GemmOp>(&op)) g->spec.validate();
        std::size_t source_rows = 0;
        if (const auto* g = std::get_if<GatherOp>(&op))
            source_rows = g->src_rows.buf == Buf::train_rows ? static_cast<std::size_t>(n_) : static_cast<std::size_t>(q_);
        for (const Access& a : accesses(op, source_rows)) {
            const std::string where = "plan: operation " + std::to_string(i) + " (" + op_name(op) + ") ";
            if (a.ref.buf == Buf::count) throw Error(where + "uses no buffer");
            if (buf_elem(a.ref.buf) != a.elem) throw Error(where + "reads " + buf_name(a.ref.buf) + " as the wrong type");
            if (a.ref.offset + a.extent > elements(a.ref.buf))
                throw Error(where + "reaches past the end of " + buf_name(a.ref.buf));
        }
    }
}

}  // namespace revgraph::cuda
