// The task plan: its buffers' sizes and the programs of reset, normalise, each epoch, each SGD step
// and predict, in launch order (engine/cuda/task_plan.hpp). The operations themselves are in
// engine/cuda/ops/; the checker and the dispatch over operations in program.cpp.
#include <algorithm>
#include <set>

#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/runtime_options.hpp"

// Operations are written with designated initializers naming the fields that matter; the others
// keep their declared defaults, which is what GCC's -Wmissing-field-initializers complains about.
// Pushed and popped: in a unity build the files after this one share its unit.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace revgraph::cuda {

const char* path_name(Path p) { return p == Path::fused ? "fused" : "cublaslt"; }

bool path_uses_cublaslt(Path p) { return p == Path::cublaslt; }

bool path_runs_width(Path, int) { return true; }  // every width TaskConfig allows, on both paths

// The runtime option's range is the cluster's (the option reaches the plan as cluster_blocks).
static_assert(RuntimeOptions::kMaxClusterBlocks == fused::kMaxClusterBlocks);

using model::kClasses;
using model::kFeatures;
using model::kPixels;

std::vector<Batch> epoch_batches(std::int64_t n, int batch_size) {
    if (n < 1) throw Error("plan: no training examples");
    if (batch_size < 1) throw Error("plan: batch_size must be >= 1");
    std::vector<Batch> out;
    for (std::int64_t first = 0; first < n; first += batch_size)
        out.push_back({first, static_cast<int>(std::min<std::int64_t>(batch_size, n - first))});
    return out;
}

TaskPlan::TaskPlan(const TaskConfig& config, std::int64_t train_count, std::int64_t test_count, Path path,
                   int cluster_blocks)
    : config_(config),
      layout_(config.depth, config.width),
      n_(train_count),
      q_(test_count),
      full_batch_(static_cast<int>(std::min<std::int64_t>(config.batch_size, train_count))),
      batches_(epoch_batches(train_count, config.batch_size)),
      alpha_(static_cast<float>(config.alpha)),
      path_(path),
      cluster_blocks_(cluster_blocks) {
    config_.validate();
    if (cluster_blocks_ != 0) {
        if (path_ == Path::fused && any_width())  // the user's option meets a config: name both, and the way out
            throw Error("cuda-fused: whole epochs in one cluster launch (cluster blocks " +
                        std::to_string(cluster_blocks_) + ") run the width-" + std::to_string(model::kFeatures) +
                        " step only, not width " + std::to_string(layout_.width()) +
                        ": set cluster blocks to 0 (--cluster-blocks 0, configure_gpu(cluster_blocks=0)) for it");
        if (const char* problem = cluster_problem()) throw Error(problem);
        if (const char* problem = fused::cluster_blocks_problem(cluster_blocks_)) throw Error(problem);
    }
    if (q_ < 1) throw Error("plan: no query examples");
    const std::int64_t width = layout_.width(), int_max = (std::int64_t(1) << 31) - 1;
    if (n_ > int_max || q_ * width > int_max) throw Error("plan: too many examples for 32-bit indices");
    // The any-width kernels index the stacks (every branch's slot of full-batch rows, the last
    // element at stack - 1) and the parameters with 32-bit ints (fused_any::Args, whose layout the
    // race entry shares): refuse a shape past that here, in one line, rather than let an index wrap.
    // The largest shape of TaskConfig at batch 2048 (depth 1024, width 1024) just fits.
    const std::int64_t stack = std::int64_t{layout_.branch_count()} * full_batch_ * layout_.half();
    if (any_width() && (stack - 1 > int_max || static_cast<std::int64_t>(layout_.total()) > int_max))
        throw Error("cuda-fused: depth " + std::to_string(config_.depth) + ", width " + std::to_string(width) +
                    " and batch " + std::to_string(full_batch_) + " need " + std::to_string(stack) +
                    " stacked floats, past the kernels' 32-bit indices (" + std::to_string(int_max) +
                    "); use a smaller batch or depth, or the cpu backend");
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

const char* TaskPlan::cluster_problem() const {
    return path_ == Path::fused && !any_width()
               ? nullptr
               : "plan: whole epochs in one cluster launch run cuda-fused's width-82 step only";
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
    const std::size_t width = static_cast<std::size_t>(layout_.width()),
                      half = static_cast<std::size_t>(layout_.half());
    if (any_width() && (b == Buf::train_rows || b == Buf::query_rows)) return 0;  // lifted as gathered
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
        case Buf::train_rows: return n * width;
        case Buf::query_rows: return q * width;
        case Buf::train_labels: return n;
        case Buf::permutations: return static_cast<std::size_t>(config_.epochs) * n;
        case Buf::order: return n;
        case Buf::state:
        case Buf::dstate: return bs * width;
        case Buf::act_left:
        case Buf::act_right:
        case Buf::branch:
        case Buf::dtmp: return bs * half;
        case Buf::scores:
        case Buf::dscores: return bs * kClasses;
        case Buf::batch_labels: return bs;
        case Buf::act_stack:
        case Buf::grad_stack: return static_cast<std::size_t>(layout_.branch_count()) * bs * half;
        case Buf::query_state: return q * width;
        case Buf::query_act_left:
        case Buf::query_act_right:
        case Buf::query_branch: return q * half;
        case Buf::query_scores: return q * kClasses;
        case Buf::predictions: return q;
        case Buf::count: break;
    }
    throw Error("plan: no such buffer");
}

Program TaskPlan::reset() const {
    const std::size_t total = layout_.total();
    return {CopyOp{{Buf::params}, {Buf::initial}, total}, ZeroOp{{Buf::velocity}, total}, ZeroOp{{Buf::grads}, total}};
}

Program TaskPlan::normalize() const {
    if (any_width()) return {};  // the any-width kernels lift each row as they gather it
    return {LiftOp{{Buf::train_raw}, {Buf::train_rows}, n_, {Buf::query_raw}, {Buf::query_rows}, q_, layout_.width()}};
}

Program TaskPlan::epoch_start(int e) const {
    if (e < 0 || e >= config_.epochs) throw Error("plan: no epoch " + std::to_string(e));
    return {CopyOp{{Buf::order},
                   {Buf::permutations, static_cast<std::size_t>(e) * static_cast<std::size_t>(n_)},
                   static_cast<std::size_t>(n_)}};
}

// docs/spec.md §3 forward on `rows` states: for each block, a product and a coupling kernel per half. Each
// coupling kernel also materialises relu of the half it just updated, which is exactly the input the
// next product reads; the first relu (of the right half) comes from the gather.
void TaskPlan::core_forward(Program& p, int rows, Buf state, Buf act_left, Buf act_right, Buf branch) const {
    for (int k = 0; k < layout_.depth(); ++k) {
        // left += α·linear(relu(right), W_2k)
        p.push_back(GemmOp{
            couple_gemm(rows, layout_.half()), {Buf::params, layout_.branch_offset(2 * k)}, {act_right}, {branch}});
        p.push_back(CoupleOp{.rows = rows,
                             .half = {state, 0},
                             .branch = {branch},
                             .act = {act_left},
                             .sign = 1.0f,
                             .alpha = alpha_,
                             .half_cols = layout_.half()});
        // right += α·linear(relu(left), W_2k+1)
        p.push_back(GemmOp{
            couple_gemm(rows, layout_.half()), {Buf::params, layout_.branch_offset(2 * k + 1)}, {act_left}, {branch}});
        p.push_back(CoupleOp{.rows = rows,
                             .half = {state, static_cast<std::size_t>(layout_.half())},
                             .branch = {branch},
                             .act = {act_right},
                             .sign = 1.0f,
                             .alpha = alpha_,
                             .half_cols = layout_.half()});
    }
}

// One SGD step. Launch order (D = depth), with what is fused where:
//   gather (+relu of the right half)                                           1 kernel
//   per block: product, coupling(+relu), product, coupling(+relu)              2 products + 2 kernels
//   head product                                                               1 product
//   loss: scores += bias, softmax-CE gradient, head-bias column sum,
//         relu(left) of the retained state into G_{D-1}'s slot               1 kernel
//   head-weight gradient, head-input gradient                                  2 products
//     (the weight gradient off the chain on a second stream, GemmOp::beside, until b below)
//   reconstructing backward, block k = D-1 .. 0 (docs/spec.md §4), F_k = weights.2k, G_k = weights.2k+1:
//     a  branch = relu(l) G_kᵀ                                                 product
//     b  r -= α·branch and relu(r) into F_k's slot (rebuild r); before that,
//        fused: the previous block's dr += dtmp ⊙ [r > 0] on r before the
//        rebuild; the finished dr copied into G_k's gradient slot              kernel
//     d  dtmp = α dr G_k              (k > 0: off the chain, beside e)          product
//     e  branch = relu(r) F_kᵀ        (k > 0 only)                             product
//     f  dl += dtmp ⊙ [l > 0] on l before the rebuild, the finished dl into
//        F_k's gradient slot, then l -= α·branch and relu(l) into G_{k-1}'s
//        slot                         (k = 0: the mask and the copy only)      kernel
//     h  dtmp = α dl F_k              (k > 0 only; masked into dr by the next block's b)  product
//   every branch's weight gradient, dW_i = α g_iᵀ relu(x_i), as ONE strided-batch product over the
//   slots (they land at weights.i's place in the gradient buffer)              1 product
//   SGD with momentum and weight decay on every parameter                      1 kernel
// So docs/spec.md §4's order of the rebuilds and of the input gradients is kept exactly; only the weight
// gradients, which nothing in the backward reads, are deferred and formed together. The head's
// weight gradient and d of every block but the first leave the chain: each is independent of the
// products it runs beside, so the step's critical path is D products shorter (bench/NOTES.md has
// the prediction the next GPU run measures).
// Block 0 skips e, h and the rebuild of l: they only serve the gradient of the core input and the
// input itself, which training never reads. Depth 2: 14 products + 11 kernels = 25 launches a step
// (10·D + 5); in the epoch graph 24 but the last step's, each SGD sharing a launch with the next
// step's gather (epoch_body, ops/sgd_gather.hpp). Why kernels at all: a mask-multiply cannot go
// into a matmul epilogue (cuBLASLt's DRELU would mask the accumulated sum, not only the new
// product), relu(input) cannot be a matmul prologue, and the coupling's add in the reference's
// rounding needs the product on its own; each lives in the one small elementwise kernel that runs
// at that point anyway.
Program TaskPlan::step(int b) const {
    const Batch batch = batches_.at(static_cast<std::size_t>(b));
    return path_ == Path::fused ? fused_step(batch, b > 0) : cublaslt_step(batch);
}

// The whole step in two fused kernels: the rows kernel (forward, loss, reconstructing backward, each
// branch's relu input and output gradient into its slot) and the grads kernel (the weight gradients
// from the slots, then SGD); engine/cuda/fused.hpp.
// follows_step: batch b > 0, whose kernel predecessor is always the previous step's grads kernel
// (in the epoch graph, and in the warm-up, which runs the epoch body once; the backend's eager
// step() puts the order's copy in front, and a copy lets no kernel start early). The first step of
// an epoch follows the order's copy, or in a warm-up of no epochs the lift kernel.
Program TaskPlan::fused_step(const Batch& batch, bool follows_step) const {
    if (any_width()) return fused_any_step(batch);
    FusedStepOp rows{.rows = batch.rows,
                     .first = batch.first,
                     .slot = full_batch_,
                     .depth = config_.depth,
                     .alpha = alpha_,
                     .lr = static_cast<float>(config_.learning_rate),
                     .momentum = static_cast<float>(config_.momentum),
                     .weight_decay = static_cast<float>(config_.weight_decay),
                     .gather_before_wait = follows_step,
                     .order = {Buf::order},
                     .train_rows = {Buf::train_rows},
                     .train_labels = {Buf::train_labels},
                     .params = {Buf::params},
                     .velocity = {Buf::velocity},
                     .grads = {Buf::grads},
                     .final_state = {Buf::state},
                     .dscores = {Buf::dscores},
                     .act_stack = {Buf::act_stack},
                     .grad_stack = {Buf::grad_stack}};
    FusedStepOp grads = rows;
    grads.part = FusedStepOp::Part::grads;
    return {rows, grads};
}

// The fused step at a width other than 82: the same two kernels' roles, on engine/cuda/fused_any/'s
// phases (the half width read at run time), reading the raw pixels through the order.
Program TaskPlan::fused_any_step(const Batch& batch) const {
    FusedAnyStepOp rows{.rows = batch.rows,
                        .first = batch.first,
                        .slot = full_batch_,
                        .depth = config_.depth,
                        .half = layout_.half(),
                        .alpha = alpha_,
                        .lr = static_cast<float>(config_.learning_rate),
                        .momentum = static_cast<float>(config_.momentum),
                        .weight_decay = static_cast<float>(config_.weight_decay),
                        .order = {Buf::order},
                        .train_raw = {Buf::train_raw},
                        .train_labels = {Buf::train_labels},
                        .params = {Buf::params},
                        .velocity = {Buf::velocity},
                        .grads = {Buf::grads},
                        .final_state = {Buf::state},
                        .dscores = {Buf::dscores},
                        .act_stack = {Buf::act_stack},
                        .grad_stack = {Buf::grad_stack}};
    FusedAnyStepOp grads = rows;
    grads.part = FusedAnyStepOp::Part::grads;
    return {rows, grads};
}

// The launch order written above step(), one phase per function.
Program TaskPlan::cublaslt_step(const Batch& batch) const {
    const int rows = batch.rows;
    Program p;
    p.push_back(GatherOp{.rows = rows,
                         .identity = false,
                         .order = {Buf::order},
                         .first = batch.first,
                         .src_rows = {Buf::train_rows},
                         .src_labels = {Buf::train_labels},
                         .state = {Buf::state},
                         .act_right = {Buf::act_right},
                         .labels = {Buf::batch_labels},
                         .with_labels = true,
                         .half_cols = layout_.half()});
    core_forward(p, rows, Buf::state, Buf::act_left, Buf::act_right, Buf::branch);
    head_and_loss(p, rows);
    reconstructing_backward(p, rows);
    weight_grads_and_sgd(p, rows);
    return p;
}

// Slot i of the stacks belongs to branch i (weights.i): relu of its input and its output gradient.
Ref TaskPlan::act_slot(int i) const {
    return {Buf::act_stack, static_cast<std::size_t>(i) * static_cast<std::size_t>(full_batch_) * layout_.half()};
}
Ref TaskPlan::grad_slot(int i) const {
    return {Buf::grad_stack, static_cast<std::size_t>(i) * static_cast<std::size_t>(full_batch_) * layout_.half()};
}

// Head product, loss (which also puts relu(left) of the retained state into G_{D-1}'s slot), then
// the head's weight and input gradients.
void TaskPlan::head_and_loss(Program& p, int rows) const {
    const int top = layout_.branch_count() - 1;  // G_{D-1}
    const std::size_t hw = layout_.head_weight_offset(), hb = layout_.head_bias_offset();
    p.push_back(GemmOp{head_forward_gemm(rows, layout_.half()), {Buf::params, hw}, {Buf::state}, {Buf::scores}});
    p.push_back(LossOp{.rows = rows,
                       .scores = {Buf::scores},
                       .bias = {Buf::params, hb},
                       .labels = {Buf::batch_labels},
                       .dscores = {Buf::dscores},
                       .dbias = {Buf::grads, hb},
                       .state = {Buf::state},
                       .act_left = act_slot(top),
                       .half_cols = layout_.half()});
    // The head's weight gradient feeds only SGD: off the chain, beside the head-input gradient and
    // the first rebuild's product (a of the backward's first block), joined before that rebuild's
    // coupling rewrites the state it reads.
    p.push_back(GemmOp{.spec = head_weight_grad_gemm(rows, layout_.half()),
                       .a = {Buf::state},
                       .b = {Buf::dscores},
                       .d = {Buf::grads, hw},
                       .beside = 2});
    p.push_back(GemmOp{head_input_grad_gemm(rows, layout_.half()), {Buf::params, hw}, {Buf::dscores}, {Buf::dstate}});
}

// Blocks D-1 .. 0, steps a .. h of the comment above step().
void TaskPlan::reconstructing_backward(Program& p, int rows) const {
    const Ref l{Buf::state, 0}, r{Buf::state, static_cast<std::size_t>(layout_.half())};
    const Ref dl{Buf::dstate, 0}, dr{Buf::dstate, static_cast<std::size_t>(layout_.half())};
    bool pending_dr_mask = false;  // an h product whose mask-multiply into dr is still to come
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        const int f = 2 * k, g = 2 * k + 1;
        const Ref wf{Buf::params, layout_.branch_offset(f)}, wg{Buf::params, layout_.branch_offset(g)};
        // G branch: rebuild r; its input is l (relu in slot g), its output gradient dr.
        p.push_back(GemmOp{couple_gemm(rows, layout_.half()), wg, act_slot(g), {Buf::branch}});  // a
        p.push_back(CoupleOp{.rows = rows,
                             .half = r,
                             .branch = {Buf::branch},
                             .act = act_slot(f),
                             .sign = -1.0f,
                             .alpha = alpha_,
                             .masked = pending_dr_mask,
                             .dhalf = dr,
                             .dtmp = {Buf::dtmp},
                             .copy_grad = true,
                             .grad_copy = grad_slot(g),
                             .half_cols = layout_.half()});  // b
        // d runs beside e (off the chain, joined before f reads dtmp); block 0 has no e.
        p.push_back(GemmOp{.spec = input_grad_gemm(rows, alpha_, layout_.half()),
                           .a = wg,
                           .b = dr,
                           .d = {Buf::dtmp},
                           .beside = k > 0 ? 1 : 0});  // d
        // F branch: rebuild l; its input is r (relu in slot f), its output gradient dl.
        if (k > 0) {
            p.push_back(GemmOp{couple_gemm(rows, layout_.half()), wf, act_slot(f), {Buf::branch}});  // e
            p.push_back(CoupleOp{.rows = rows,
                                 .half = l,
                                 .branch = {Buf::branch},
                                 .act = act_slot(g - 2),
                                 .sign = -1.0f,
                                 .alpha = alpha_,
                                 .masked = true,
                                 .dhalf = dl,
                                 .dtmp = {Buf::dtmp},
                                 .copy_grad = true,
                                 .grad_copy = grad_slot(f),
                                 .half_cols = layout_.half()});                                       // f
            p.push_back(GemmOp{input_grad_gemm(rows, alpha_, layout_.half()), wf, dl, {Buf::dtmp}});  // h
        } else {
            p.push_back(MaskOp{.rows = rows,
                               .dhalf = dl,
                               .dtmp = {Buf::dtmp},
                               .half = l,
                               .copy_grad = true,
                               .grad_copy = grad_slot(f),
                               .half_cols = layout_.half()});  // f
        }
        pending_dr_mask = k > 0;
    }
}

// Every branch's weight gradient as one strided-batch product over the slots, then SGD.
void TaskPlan::weight_grads_and_sgd(Program& p, int rows) const {
    const std::int64_t slot = static_cast<std::int64_t>(full_batch_) * layout_.half();
    p.push_back(GemmOp{branch_grads_gemm(rows, alpha_, layout_.branch_count(), slot, layout_.half()),
                       act_slot(0),
                       grad_slot(0),
                       {Buf::grads, layout_.branch_offset(0)}});
    p.push_back(SgdOp{layout_.total(),
                      {Buf::params},
                      {Buf::velocity},
                      {Buf::grads},
                      static_cast<float>(config_.learning_rate),
                      static_cast<float>(config_.momentum),
                      static_cast<float>(config_.weight_decay)});
}

// An epoch's steps, or with cluster_blocks the one cluster launch that runs them all (engine/cuda/
// ops/fused_epochs.hpp), its constants and buffers those of the first step's rows part.
Program TaskPlan::epoch_body() const {
    if (cluster_blocks_ != 0) {
        FusedEpochsOp op{.step = std::get<FusedStepOp>(fused_step(batches_.front(), false).front()),
                         .train_count = n_,
                         .batch_size = full_batch_,
                         .cluster_blocks = cluster_blocks_};
        return {op};
    }
    std::vector<Program> steps;
    for (std::size_t b = 0; b < batches_.size(); ++b) steps.push_back(step(static_cast<int>(b)));
    // cuda: a step's SGD and the next step's gather, two small kernels back to back on the chain with
    // nothing between them and no buffer in common, as one launch (ops/sgd_gather.hpp); a step
    // alone (step(b), the eager step-by-step path) keeps both, with the same bits.
    if (path_ == Path::cublaslt)
        for (std::size_t b = 0; b + 1 < steps.size(); ++b) {
            steps[b].back() = SgdGatherOp{std::get<SgdOp>(steps[b].back()), std::get<GatherOp>(steps[b + 1].front())};
            steps[b + 1].erase(steps[b + 1].begin());
        }
    Program p;
    for (const Program& s : steps) p.insert(p.end(), s.begin(), s.end());
    return p;
}

Program TaskPlan::epoch(int e) const {
    Program p = epoch_start(e);
    const Program body = epoch_body();
    p.insert(p.end(), body.begin(), body.end());
    return p;
}

Program TaskPlan::predict() const {
    const int rows = static_cast<int>(q_);
    if (any_width())
        return {FusedAnyPredictOp{.rows = rows,
                                  .depth = config_.depth,
                                  .half = layout_.half(),
                                  .alpha = alpha_,
                                  .params = {Buf::params},
                                  .query_raw = {Buf::query_raw},
                                  .scores = {Buf::query_scores},
                                  .predictions = {Buf::predictions}}};
    if (path_ == Path::fused)
        return {FusedPredictOp{.rows = q_,
                               .depth = config_.depth,
                               .alpha = alpha_,
                               .params = {Buf::params},
                               .query_rows = {Buf::query_rows},
                               .scores = {Buf::query_scores},
                               .predictions = {Buf::predictions}}};
    Program p;
    p.push_back(GatherOp{.rows = rows,
                         .identity = true,
                         .src_rows = {Buf::query_rows},
                         .state = {Buf::query_state},
                         .act_right = {Buf::query_act_right},
                         .half_cols = layout_.half()});
    core_forward(p, rows, Buf::query_state, Buf::query_act_left, Buf::query_act_right, Buf::query_branch);
    p.push_back(GemmOp{head_forward_gemm(rows, layout_.half()),
                       {Buf::params, layout_.head_weight_offset()},
                       {Buf::query_state},
                       {Buf::query_scores}});
    p.push_back(ArgmaxOp{.rows = q_,
                         .scores = {Buf::query_scores},
                         .bias = {Buf::params, layout_.head_bias_offset()},
                         .predictions = {Buf::predictions}});
    return p;
}

}  // namespace revgraph::cuda

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
