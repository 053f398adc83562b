#include "engine/cuda/program.hpp"

#include <algorithm>
#include <set>

#include "engine/error.hpp"

// Operations are written with designated initializers naming the fields that matter; the others
// keep their declared defaults, which is what GCC's -Wmissing-field-initializers complains about.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

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
        case Buf::act_stack: return "act_stack";
        case Buf::grad_stack: return "grad_stack";
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

namespace {
std::size_t batched(std::size_t one, int batch, std::int64_t stride) {
    return one == 0 ? 0 : static_cast<std::size_t>(batch - 1) * static_cast<std::size_t>(stride) + one;
}
}  // namespace

std::size_t GemmSpec::a_extent() const { return batched(span(a_rows(), a_cols(), lda), batch, stride_a); }
std::size_t GemmSpec::b_extent() const { return batched(span(b_rows(), b_cols(), ldb), batch, stride_b); }
std::size_t GemmSpec::d_extent() const { return batched(span(m, n, ldd), batch, stride_d); }

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
                      static_cast<std::size_t>(stride_d) < span(m, n, ldd)))  // outputs must not overlap
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
                          [](const FusedStepOp& f) {
                              return f.part == FusedStepOp::Part::rows ? "fused_rows" : "fused_grads";
                          },
                          [](const FusedPredictOp&) { return "fused_predict"; },
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
                return std::vector<Access>{{g.a, g.spec.a_extent(), E::f32}, {g.b, g.spec.b_extent(), E::f32},
                                           {g.d, g.spec.d_extent(), E::f32}};
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
                if (c.masked || c.copy_grad) a.push_back({c.dhalf, half_extent(c.rows), E::f32});
                if (c.masked) a.push_back({c.dtmp, n41(c.rows), E::f32});
                if (c.copy_grad) a.push_back({c.grad_copy, n41(c.rows), E::f32});
                return a;
            },
            [](const MaskOp& m) {
                std::vector<Access> a{{m.dhalf, half_extent(m.rows), E::f32},
                                      {m.dtmp, n41(m.rows), E::f32},
                                      {m.half, half_extent(m.rows), E::f32}};
                if (m.copy_grad) a.push_back({m.grad_copy, n41(m.rows), E::f32});
                return a;
            },
            [](const LossOp& l) {
                const std::size_t s = static_cast<std::size_t>(l.rows) * kClasses;
                return std::vector<Access>{{l.scores, s, E::f32},
                                           {l.bias, static_cast<std::size_t>(kClasses), E::f32},
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
                                           {a.bias, static_cast<std::size_t>(kClasses), E::f32},
                                           {a.predictions, static_cast<std::size_t>(a.rows), E::i64}};
            },
            [&](const FusedStepOp& s) {
                const std::size_t params = model::Layout(s.depth).total(), rows = static_cast<std::size_t>(s.rows);
                const std::size_t stack = static_cast<std::size_t>(2 * s.depth - 1) * s.slot * kHalf + n41(s.rows);
                std::vector<Access> a{{s.params, params, E::f32},
                                      {s.final_state, n82(s.rows), E::f32},
                                      {s.dscores, rows * kClasses, E::f32},
                                      {s.act_stack, stack, E::f32},
                                      {s.grad_stack, stack, E::f32}};
                if (s.part == FusedStepOp::Part::rows) {
                    a.push_back({s.order, static_cast<std::size_t>(s.first) + rows, E::i32});
                    a.push_back({s.train_rows, n82(static_cast<std::int64_t>(gather_source_rows)), E::f32});
                    a.push_back({s.train_labels, gather_source_rows, E::i32});
                } else {
                    a.push_back({s.velocity, params, E::f32});
                    a.push_back({s.grads, params, E::f32});
                }
                return a;
            },
            [](const FusedPredictOp& p) {
                const std::size_t rows = static_cast<std::size_t>(p.rows);
                return std::vector<Access>{{p.params, model::Layout(p.depth).total(), E::f32},
                                           {p.query_rows, n82(p.rows), E::f32},
                                           {p.scores, rows * kClasses, E::f32},
                                           {p.predictions, rows, E::i64}};
            },
        },
        op);
}

// ---- the plan ----------------------------------------------------------------------------------

const char* path_name(Path p) { return p == Path::fused ? "fused" : "cublaslt"; }

TaskPlan::TaskPlan(const TaskConfig& config, std::int64_t train_count, std::int64_t test_count, Path path)
    : config_(config),
      layout_(config.depth),
      n_(train_count),
      q_(test_count),
      full_batch_(static_cast<int>(std::min<std::int64_t>(config.batch_size, train_count))),
      batches_(epoch_batches(train_count, config.batch_size)),
      alpha_(static_cast<float>(config.alpha)),
      path_(path) {
    config_.validate();
    if (q_ < 1) throw Error("plan: no query examples");
    if (n_ > (std::int64_t(1) << 31) - 1 || q_ * kFeatures > (std::int64_t(1) << 31) - 1)
        throw Error("plan: too many examples for 32-bit indices");
    // Every epoch's order stays resident on the device (and is staged once on the host), so
    // their total is bounded here, before anything is allocated or drawn.
    const std::uint64_t entries = static_cast<std::uint64_t>(config_.epochs) * static_cast<std::uint64_t>(n_);
    if (entries * sizeof(std::int32_t) > kMaxResidentPermutationBytes)
        throw Error("cuda: " + std::to_string(config_.epochs) + " epochs x " + std::to_string(n_) +
                    " train examples need " + std::to_string(entries * sizeof(std::int32_t) >> 20) +
                    " MiB of resident epoch permutations, over the GPU backends' limit of " +
                    std::to_string(kMaxResidentPermutationBytes >> 20) +
                    " MiB; use fewer epochs or the cpu backend, which draws each epoch's order when it needs it");
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
    if (path_ == Path::fused) {
        switch (b) {  // scratch of the cuBLASLt path's products and small kernels
            case Buf::dstate:
            case Buf::act_left:
            case Buf::act_right:
            case Buf::branch:
            case Buf::dtmp:
            case Buf::scores:
            case Buf::batch_labels:
            case Buf::query_state:
            case Buf::query_act_left:
            case Buf::query_act_right:
            case Buf::query_branch: return 0;
            default: break;
        }
    }
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
        case Buf::act_stack:
        case Buf::grad_stack: return static_cast<std::size_t>(layout_.branch_count()) * bs * kHalf;
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
        p.push_back(GemmOp{couple_gemm(rows), {Buf::params, layout_.branch_offset(2 * k)}, {act_right}, {branch}});
        p.push_back(CoupleOp{.rows = rows, .half = {state, 0}, .branch = {branch}, .act = {act_left}, .sign = 1.0f,
                             .alpha = alpha_});
        // right += α·linear(relu(left), W_2k+1)
        p.push_back(GemmOp{couple_gemm(rows), {Buf::params, layout_.branch_offset(2 * k + 1)}, {act_left}, {branch}});
        p.push_back(CoupleOp{.rows = rows, .half = {state, kHalf}, .branch = {branch}, .act = {act_right},
                             .sign = 1.0f, .alpha = alpha_});
    }
}

// One SGD step. Launch order (D = depth), with what is fused where:
//   gather (+relu of the right half)                                           1 kernel
//   per block: product, coupling(+relu), product, coupling(+relu)              2 products + 2 kernels
//   head product                                                               1 product
//   loss: scores += bias, softmax-CE gradient, head-bias column sum,
//         relu(left) of the retained state into G_{D-1}'s slot               1 kernel
//   head-weight gradient, head-input gradient                                  2 products
//   reconstructing backward, block k = D-1 .. 0 (SPEC §4), F_k = weights.2k, G_k = weights.2k+1:
//     a  branch = relu(l) G_kᵀ                                                 product
//     b  r -= α·branch and relu(r) into F_k's slot (rebuild r); before that,
//        fused: the previous block's dr += dtmp ⊙ [r > 0] on r before the
//        rebuild; the finished dr copied into G_k's gradient slot              kernel
//     d  dtmp = α dr G_k                                                       product
//     e  branch = relu(r) F_kᵀ        (k > 0 only)                             product
//     f  dl += dtmp ⊙ [l > 0] on l before the rebuild, the finished dl into
//        F_k's gradient slot, then l -= α·branch and relu(l) into G_{k-1}'s
//        slot                         (k = 0: the mask and the copy only)      kernel
//     h  dtmp = α dl F_k              (k > 0 only; masked into dr by the next block's b)  product
//   every branch's weight gradient, dW_i = α g_iᵀ relu(x_i), as ONE strided-batch product over the
//   slots (they land at weights.i's place in the gradient buffer)              1 product
//   SGD with momentum and weight decay on every parameter                      1 kernel
// So the SPEC order of the rebuilds and of the input gradients is kept exactly; only the weight
// gradients, which nothing in the backward reads, are deferred and formed together.
// Block 0 skips e, h and the rebuild of l: they only serve the gradient of the core input and the
// input itself, which training never reads. Depth 2: 14 products + 11 kernels = 25 launches a step
// (10·D + 5). Why kernels at all: a mask-multiply cannot go into a matmul epilogue (cuBLASLt's DRELU
// would mask the accumulated sum, not only the new product), relu(input) cannot be a matmul
// prologue, and the coupling's add in the reference's rounding needs the product on its own; each
// lives in the one small elementwise kernel that runs at that point anyway.
Program TaskPlan::step(int b) const {
    const Batch batch = batches_.at(static_cast<std::size_t>(b));
    const int rows = batch.rows;
    if (path_ == Path::fused) {
        FusedStepOp op{.rows = rows, .first = batch.first, .slot = full_batch_, .depth = config_.depth,
                       .alpha = alpha_, .lr = static_cast<float>(config_.learning_rate),
                       .momentum = static_cast<float>(config_.momentum),
                       .weight_decay = static_cast<float>(config_.weight_decay), .order = {Buf::order},
                       .train_rows = {Buf::train_rows}, .train_labels = {Buf::train_labels}, .params = {Buf::params},
                       .velocity = {Buf::velocity}, .grads = {Buf::grads}, .final_state = {Buf::state},
                       .dscores = {Buf::dscores}, .act_stack = {Buf::act_stack}, .grad_stack = {Buf::grad_stack}};
        FusedStepOp grads = op;
        grads.part = FusedStepOp::Part::grads;
        return {op, grads};
    }
    Program p;
    p.push_back(GatherOp{.rows = rows, .identity = false, .order = {Buf::order}, .first = batch.first,
                         .src_rows = {Buf::train_rows}, .src_labels = {Buf::train_labels}, .state = {Buf::state},
                         .act_right = {Buf::act_right}, .labels = {Buf::batch_labels}, .with_labels = true});
    core_forward(p, rows, Buf::state, Buf::act_left, Buf::act_right, Buf::branch);

    // Slot i of the stacks belongs to branch i (weights.i): relu of its input and its output gradient.
    const std::size_t slot = static_cast<std::size_t>(full_batch_) * kHalf;
    const auto act_slot = [&](int i) { return Ref{Buf::act_stack, static_cast<std::size_t>(i) * slot}; };
    const auto grad_slot = [&](int i) { return Ref{Buf::grad_stack, static_cast<std::size_t>(i) * slot}; };
    const int top = layout_.branch_count() - 1;  // G_{D-1}

    const std::size_t hw = layout_.head_weight_offset(), hb = layout_.head_bias_offset();
    p.push_back(GemmOp{head_forward_gemm(rows), {Buf::params, hw}, {Buf::state}, {Buf::scores}});
    p.push_back(LossOp{.rows = rows, .scores = {Buf::scores}, .bias = {Buf::params, hb}, .labels = {Buf::batch_labels},
                       .dscores = {Buf::dscores}, .dbias = {Buf::grads, hb}, .state = {Buf::state},
                       .act_left = act_slot(top)});
    p.push_back(GemmOp{head_weight_grad_gemm(rows), {Buf::state}, {Buf::dscores}, {Buf::grads, hw}});
    p.push_back(GemmOp{head_input_grad_gemm(rows), {Buf::params, hw}, {Buf::dscores}, {Buf::dstate}});

    const Ref l{Buf::state, 0}, r{Buf::state, static_cast<std::size_t>(kHalf)};
    const Ref dl{Buf::dstate, 0}, dr{Buf::dstate, static_cast<std::size_t>(kHalf)};
    bool pending_dr_mask = false;  // an h product whose mask-multiply into dr is still to come
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        const int f = 2 * k, g = 2 * k + 1;
        const Ref wf{Buf::params, layout_.branch_offset(f)}, wg{Buf::params, layout_.branch_offset(g)};
        // G branch: rebuild r; its input is l (relu in slot g), its output gradient dr.
        p.push_back(GemmOp{couple_gemm(rows), wg, act_slot(g), {Buf::branch}});                                   // a
        p.push_back(CoupleOp{.rows = rows, .half = r, .branch = {Buf::branch}, .act = act_slot(f), .sign = -1.0f,
                             .alpha = alpha_, .masked = pending_dr_mask, .dhalf = dr, .dtmp = {Buf::dtmp},
                             .copy_grad = true, .grad_copy = grad_slot(g)});                                       // b
        p.push_back(GemmOp{input_grad_gemm(rows, alpha_), wg, dr, {Buf::dtmp}});                                  // d
        // F branch: rebuild l; its input is r (relu in slot f), its output gradient dl.
        if (k > 0) {
            p.push_back(GemmOp{couple_gemm(rows), wf, act_slot(f), {Buf::branch}});                               // e
            p.push_back(CoupleOp{.rows = rows, .half = l, .branch = {Buf::branch}, .act = act_slot(g - 2),
                                 .sign = -1.0f, .alpha = alpha_, .masked = true, .dhalf = dl, .dtmp = {Buf::dtmp},
                                 .copy_grad = true, .grad_copy = grad_slot(f)});                                   // f
            p.push_back(GemmOp{input_grad_gemm(rows, alpha_), wf, dl, {Buf::dtmp}});                              // h
        } else {
            p.push_back(MaskOp{.rows = rows, .dhalf = dl, .dtmp = {Buf::dtmp}, .half = l, .copy_grad = true,
                               .grad_copy = grad_slot(f)});                                                        // f
        }
        pending_dr_mask = k > 0;
    }
    p.push_back(GemmOp{branch_grads_gemm(rows, alpha_, layout_.branch_count(), static_cast<std::int64_t>(slot)),
                       act_slot(0), grad_slot(0), {Buf::grads, layout_.branch_offset(0)}});
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
    if (path_ == Path::fused)
        return {FusedPredictOp{.rows = q_, .depth = config_.depth, .alpha = alpha_, .params = {Buf::params},
                               .query_rows = {Buf::query_rows}, .scores = {Buf::query_scores},
                               .predictions = {Buf::predictions}}};
    Program p;
    p.push_back(GatherOp{.rows = rows, .identity = true, .src_rows = {Buf::query_rows}, .state = {Buf::query_state},
                         .act_right = {Buf::query_act_right}});
    core_forward(p, rows, Buf::query_state, Buf::query_act_left, Buf::query_act_right, Buf::query_branch);
    p.push_back(GemmOp{head_forward_gemm(rows), {Buf::params, layout_.head_weight_offset()}, {Buf::query_state},
                       {Buf::query_scores}});
    p.push_back(ArgmaxOp{.rows = q_, .scores = {Buf::query_scores}, .bias = {Buf::params, layout_.head_bias_offset()},
                         .predictions = {Buf::predictions}});
    return p;
}

void TaskPlan::check(const Program& p) const {
    for (std::size_t i = 0; i < p.size(); ++i) {
        const Op& op = p[i];
        if (const auto* g = std::get_if<GemmOp>(&op)) g->spec.validate();
        std::size_t source_rows = 0;
        if (const auto* g = std::get_if<GatherOp>(&op))
            source_rows = g->src_rows.buf == Buf::train_rows ? static_cast<std::size_t>(n_) : static_cast<std::size_t>(q_);
        if (std::holds_alternative<FusedStepOp>(op)) source_rows = static_cast<std::size_t>(n_);
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
