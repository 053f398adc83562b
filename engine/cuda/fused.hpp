#pragma once
// The fused path of the CUDA backend (`--backend cuda-fused`): an SGD step is TWO kernels instead of
// the cuBLASLt path's ~25 launches, and prediction is one.
//
// Why: a rev88 step is ~3.3 M multiply-adds on 128 x 82 floats, far too little to fill a GPU, so
// the time of the cuBLASLt path is mostly the latency of its dependent launches. Here
//   1. the rows kernel: each block takes a few rows of the batch and runs everything that
//      is per row — gather, forward, scores, loss gradient, the head's input gradient, and the
//      reconstructing backward (docs/spec.md §4) with the branch input gradients — in shared memory. On the
//      way back it leaves, for every branch, relu of the branch's input and α·(its output gradient)
//      in two stacks, and it leaves the final state and the score gradients, all column-major
//      (StepArgs);
//   2. the grads kernel: each block takes a group of parameters, sums their gradients over the
//      batch's rows from those stacks (in the reference's order), and applies SGD to them.
// Only cross-row sums need the second launch; everything else never leaves its block.
//
// Every operation is written once, here, as *phases*: sets of independent work items (an item
// writes only its own outputs and reads nothing another item of the phase writes), separated by a
// barrier. The kernels (engine/cuda/kernels/fused.cuh) spread a phase's items over a block's
// threads and end it with __syncthreads(); the CPU emulator (engine/cuda/emulator.cpp) runs them in
// a loop, block after block. Each item sums in the trainer's order without fused multiply-adds
// (nvcc runs with --fmad=false): L lanes joined by a fixed tree (engine/model/sum_order.hpp), L a
// template parameter of every phase below, kSumLanes where the engine runs them. So the emulated
// kernels reproduce cpu::Trainer<float> at the same L bit for bit; the softmax's exponential is
// model::exp_f32 on both sides (plain IEEE operations, not the C library's or CUDA's expf), so on a
// GPU the bits should be the same too. How the load phases move bytes (read-only loads, vector
// copies, row pairs) is in fused_load.hpp; where a state row and the staged parameters sit in
// shared memory (halves and weight rows on 16 bytes) in fused_layout.hpp.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/cuda/fused_layout.hpp"
#include "engine/cuda/fused_load.hpp"
#include "engine/cuda/ordered_sum.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

// kBranchSize, kClasses, kFeatures, kHalf: model's, named in this namespace by fused_layout.hpp.

// Rows per block of the rows kernel and query rows per block of the predict kernel are launch
// shapes, not part of what is computed: every row's items are its own, so any values give the
// same bits (the kernel lab checks it, and tries others: bench/labs/kernel_lab.cpp). They travel in
// StepArgs::rows_per_block and PredictArgs::tile; these are the defaults.
//
// The rows kernel: 2 rows a block (rev88: 64 blocks a step), 192 threads: the widest per-row phase
// (2 x 82) in one round. 2 rows a block is the shape the kernel lab timed fastest of 1, 2, 4, 8 and 16
// (bench/NOTES.md, "Levers tried, and what each gave").
inline constexpr int kRowsPerBlock = 2;
inline constexpr int kRowsThreads = 192;
// The grads kernel: blocks of up to 3 outputs x 41 inputs of one branch, or 1 x 82 of the head
// (the last head block also takes the 10 biases): rev88, 66 blocks of at most 123 sums. Each sum is
// a chain of 128 dependent adds, so more blocks of fewer sums shorten the kernel: 6 x 41 and 3 x 82
// (32 blocks of up to 246 sums, two warps on each scheduler) summed slower (bench/NOTES.md, "A
// cuda-fused step, phase by phase"). Rows are staged through shared memory 128 at a time, so a
// rev88 batch is one staging pass, and in index order the whole block fits the 48 KB every block
// gets without opting in (grads_floats; more lanes take a little more, opted in).
inline constexpr int kGradsThreads = 256;
inline constexpr int kBranchOutGroup = 3;
inline constexpr int kHeadOutGroup = 1;
inline constexpr int kGradsChunk = 128;
static_assert(kGradsChunk % 8 == 0, "a chunk is whole rounds of any lane count: each chunk starts at lane 0");
inline constexpr int kGradsSumBlock = 32;  // a sum's rows loaded at once (engine/cuda/ordered_sum.hpp)
// A staged column: kGradsChunk rows and 4 floats of padding. A sum reads four rows of each operand a
// 16-byte load, and neighbouring threads of a grads block read neighbouring columns. A 16-byte shared
// load is served a quarter warp (8 threads) at a time; 132 floats are 33 16-byte units, an odd
// number, so 8 neighbouring columns start in 8 different groups of 4 banks, the 32 banks once: no
// conflict (at 128 all 8 would start in the same group, 8-way). And every column stays on 16 bytes.
inline constexpr int kGradsStride = kGradsChunk + 4;
static_assert(kGradsStride % 4 == 0 && (kGradsStride / 4) % 2 == 1, "columns on 16 bytes, conflict-free");
// Prediction: 16 query rows a block, the kernel lab's fastest tile: more blocks, shorter chains
// (bench/NOTES.md, "Levers tried, and what each gave").
inline constexpr int kPredictThreads = 256;
inline constexpr int kPredictTile = 16;

RG_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The sum order the engine runs the fused step in: the engine's, model::kEngineSumLanes (index
// order today), the reference trainer's default. Every phase takes L as a template parameter and
// the kernels are built for every L the rule admits (kernels/fused.cuh), so the kernel lab checks
// each order against cpu::Trainer<float> at that L and times it on a GPU (bench/labs/kernel_lab.cpp),
// which is what issue "Speed to the floor" chooses kEngineSumLanes from.
inline constexpr int kSumLanes = model::kEngineSumLanes;

// Why a launch shape cannot run, or null when it can.
inline const char* rows_per_block_problem(int rows_per_block) {
    return rows_per_block < 1 ? "fused: rows per block must be at least 1" : nullptr;
}
inline const char* tile_problem(int tile) {
    return tile < 1 ? "fused: the predict tile must be at least 1 row" : nullptr;
}

// ---- arguments ---------------------------------------------------------------------------------

struct StepArgs {
    int depth = 0;
    float alpha = 0, lr = 0, momentum = 0, weight_decay = 0;
    int rows = 0;                        // this batch
    std::int64_t first = 0;              // its slice of the epoch order
    int slot = 0;                        // rows of one branch's slot in the stacks (the full batch)
    int rows_per_block = kRowsPerBlock;  // the rows kernel's launch shape
    // The sum order (kSumLanes unless a lab asks for another): unlike the launch shape it changes
    // the bits. Host code picks the kernels' instantiation by it (model::with_sum_lanes); device code
    // runs the L it was instantiated for.
    int sum_lanes = kSumLanes;
    // The rows kernel copies its rows before it waits for the previous kernel: only where that
    // kernel is a step's grads kernel (a step follows a step), which writes none of them. The
    // first step of an epoch waits first: before it may run the lift kernel (warm-up with 0
    // epochs), which writes the very rows it gathers.
    bool gather_before_wait = false;
    const std::int32_t* order = nullptr;
    const float* train_rows = nullptr;  // N x 82, lifted
    const std::int32_t* train_labels = nullptr;
    float* params = nullptr;
    float* velocity = nullptr;
    float* grads = nullptr;
    int param_count = 0;
    // What the rows kernel leaves for the grads kernel, column-major with leading dimension `slot`
    // (column_major below says why), read by nothing else on this path.
    float* final_state = nullptr;  // column c, row r at c*slot + r: the core output, for the head's weight gradient
    float* dscores = nullptr;      // class j, row r at j*slot + r
    float* act_stack = nullptr;    // branch b, input i, row r at (b*41 + i)*slot + r: relu(x)
    float* grad_stack = nullptr;   // branch b, output o, row r at (b*41 + o)*slot + r: α·g_out
};

// The final state, the score gradients and the stacks are column-major, so that a grads block, whose
// sums run down the rows of a few columns, stages them column by column with 16-byte copies and sums
// four rows a 16-byte load (step_grads_as). The price is on the rows kernel's side: its stores of a
// row's values go to places `slot` floats apart (4-byte pieces, a sector each, instead of contiguous
// rows); no thread waits for a store.
// Leading dimension: the slot (the full batch's rows, what the plan sizes these buffers for), not
// this batch's rows: so every batch of an epoch, its last short one too, puts a column at the same
// place, and where the slot is a multiple of 4 (rev88: 128) every column starts on 16 bytes for
// every batch. With the batch's rows, the last batch's columns would start wherever its count puts
// them, and its staging would fall back to 4-byte copies (ColumnCopy takes either, so any slot
// works; a multiple of 4 is what makes it fast).
RG_HD std::size_t column_major(int slot, int column, int row) {
    return static_cast<std::size_t>(column) * static_cast<std::size_t>(slot) + static_cast<std::size_t>(row);
}

struct PredictArgs {
    int depth = 0;
    float alpha = 0;
    int tile = kPredictTile;    // query rows a block: the launch shape
    int sum_lanes = kSumLanes;  // the sum order, as StepArgs::sum_lanes
    const float* params = nullptr;
    int param_count = 0;
    const float* query_rows = nullptr;    // Q x 82, lifted
    float* scores = nullptr;              // Q x 10
    std::int64_t* predictions = nullptr;  // Q
};

// ---- shared memory -----------------------------------------------------------------------------

// A copy of the parameters goes to shared memory, padded (fused_layout.hpp: rev88, 32 KB for 30 of
// parameters), when it fits the device's per-block limit; otherwise the blocks read them from
// global memory (L1-cached), flat.
RG_HD std::size_t staged_floats(int param_count, bool weights_shared) {
    return weights_shared ? static_cast<std::size_t>(padded_param_floats(param_count)) : 0;
}
inline bool weights_fit(std::size_t state_floats, int param_count, std::size_t shared_limit_bytes) {
    return (state_floats + staged_floats(param_count, true)) * sizeof(float) <= shared_limit_bytes;
}

// Rows kernel: [weights] state, dstate (rows_per_block x kStateLd each), scores, the softmax's
// exponentials, dscores (x 10), labels (one int32 a row, in a float's slot).
RG_HD constexpr std::size_t rows_state_floats(int rows_per_block) {
    return static_cast<std::size_t>(rows_per_block) * (2 * kStateLd + 3 * kClasses + 1);
}
// Predict kernel: [weights] state (tile x kStateLd).
constexpr std::size_t predict_state_floats(int tile) { return static_cast<std::size_t>(tile) * kStateLd; }
// A predict block's state: after the staged parameters, if any (on 16 bytes: padded_param_floats).
RG_HD float* predict_state_at(float* smem, int param_count, bool weights_shared) {
    return smem + staged_floats(param_count, weights_shared);
}
// Grads kernel: L running sums (the lanes) per item, lane by lane (each lane's row rounded up to
// whole 16 bytes, so the columns that follow start on 16 bytes), then the widest chunk's columns
// kGradsStride apart (the bias block: the final state's 82 and all 10 classes' dscores). The block's
// parameters and momenta are not staged: each item loads its own two at the start of its last sums,
// and they land while the chain of adds runs (48 KB left no room for them beside the padded columns,
// and they no longer need a phase of their own).
inline constexpr int kGradsMaxItems = kBranchOutGroup * kHalf > kHeadOutGroup* kFeatures + kClasses
                                          ? kBranchOutGroup* kHalf
                                          : kHeadOutGroup* kFeatures + kClasses;
static_assert(kGradsMaxItems <= kGradsThreads, "a grads block's items are one round of its threads");
inline constexpr int kGradsAccFloats = (kGradsMaxItems + 3) / 4 * 4;
inline constexpr int kGradsMaxCols =
    kHalf + kBranchOutGroup > kFeatures + kClasses ? kHalf + kBranchOutGroup : kFeatures + kClasses;
RG_HD constexpr std::size_t grads_floats(int lanes) {
    return static_cast<std::size_t>(lanes) * kGradsAccFloats + static_cast<std::size_t>(kGradsMaxCols) * kGradsStride;
}
// In index order a grads block fits the 48 KB every block gets; more lanes take up to 52,544 bytes
// (8 lanes), which the launcher asks for (kernels::prepare_fused_kernels opts in to the device's limit).
static_assert(grads_floats(1) * sizeof(float) <= 48 * 1024, "a grads block in index order fits 48 KB");

RG_HD std::size_t shared_bytes(std::size_t state_floats, int param_count, bool weights_shared) {
    return (state_floats + staged_floats(param_count, weights_shared)) * sizeof(float);
}

// ---- phases shared by training and prediction --------------------------------------------------
// Items are numbered row by row, item = r·K + c for K columns (41, 82 or 10), so an item's split is a
// division by a constant (a multiply): by the row count, a run-time value, it was a ~20-instruction
// division at the head of every item. A warp's threads read the same few rows of state (broadcasts)
// and weights that sit in distinct banks (fused_layout.hpp: weight rows 44 floats apart, head rows
// 92, both an odd number of 16-byte units; consecutive floats where a thread takes a column).
// P: the parameters' layout, PaddedParams where a block staged them (its sums read four terms a
// 16-byte load of the state and of the weights) or FlatParams where it reads them in global memory
// (one term a load). The state in shared memory is always padded (kStateLd, halves at 0 and
// kPaddedHalf).

// out[o] = out[o] + sign*(alpha*branch) on each row, branch = Σ_i relu(in[i]) W[o][i] (the
// reference's couple); in/out are the column offsets of the two halves.
template <class P, int L = kSumLanes, class Exec>
RG_HD void couple(Exec& ex, const float* w, float* state, int ld, int rows, int in, int out, float sign, float alpha) {
    using Run = typename P::Run;
    ex.phase(rows * kHalf, [=](int item) {
        const int r = item / kHalf, o = item - r * kHalf;
        float* s = state + static_cast<std::size_t>(r) * ld;
        LaneSums<L> branch;
        ordered_sum4<kHalf>(branch, Run{s + in}, Run{w + o * P::kBranchLd},
                            [](float xi, float wi) { return model::relu(xi) * wi; });
        s[out + o] = s[out + o] + sign * (alpha * branch.join());
    });
}

// docs/spec.md §3: left += α·linear(relu(right), W_2k); right += α·linear(relu(left), W_2k+1).
template <class P, int L, class Exec>
RG_HD void core_forward(Exec& ex, const float* weights, int depth, float alpha, float* state, int ld, int rows) {
    for (int k = 0; k < depth; ++k) {
        couple<P, L>(ex, weights + branch_at<P>(2 * k), state, ld, rows, kPaddedHalf, 0, 1.0f, alpha);
        couple<P, L>(ex, weights + branch_at<P>(2 * k + 1), state, ld, rows, 0, kPaddedHalf, 1.0f, alpha);
    }
}

// scores = state Hᵀ + b, summed as the reference's head_forward: one sum of 82 terms, the left
// half's (terms 0..40), then on in the same lanes with the right's (terms 41..81; each half's 41
// operands in registers at a time), joined, then the bias.
template <class P, int L>
RG_HD float head_score(const float* hw, const float* hb, const float* x, int j) {
    using Run = typename P::Run;
    const float* h_row = hw + j * P::kHeadLd;
    const auto term = [](float xi, float hi) { return xi * hi; };
    LaneSums<L> acc;
    ordered_sum4<kHalf>(acc, Run{x}, Run{h_row}, term);
    ordered_sum4<kHalf, L, kHalf>(acc, Run{x + kPaddedHalf}, Run{h_row + P::head_column(kHalf)}, term);
    return acc.join() + hb[j];
}

// ---- the rows kernel ---------------------------------------------------------------------------

// One block's rows of one branch's backward (the reference's branch_backward, whose weight gradient
// is left to the grads kernel): for each of its rows and each column c, relu(x[c]) and α·g_out[c]
// go to the branch's stack slots (column-major, `slot` rows a column, from the block's first row),
// and with_dx adds dx[c] += (Σ_o α·g_out[o] W[o][c]) ⊙ [x[c] > 0] into dstate's `in` half. Reads
// dstate's `out` half, writes its `in` half: one phase.
// The output gradients g (a half of a padded dstate row) are read four a load where P's are; W's
// column c one a load (its terms are a weight row apart).
template <class P, int L, class Exec>
RG_HD void branch_rows(Exec& ex, const float* w, const float* state, float* dstate, int ld, int rows, int in, int out,
                       float alpha, bool with_dx, int slot, float* act_slot, float* grad_slot) {
    using Run = typename P::Run;
    ex.phase(rows * kHalf, [=](int item) {
        const int r = item / kHalf, c = item - r * kHalf;
        const std::size_t row = static_cast<std::size_t>(r) * ld;
        const float x = state[row + in + c];
        const float* g = dstate + row + out;
        act_slot[column_major(slot, c, r)] = model::relu(x);
        grad_slot[column_major(slot, c, r)] = alpha * g[c];
        if (with_dx) {
            LaneSums<L> acc;
            ordered_sum4<kHalf>(acc, Run{g}, StridedRun{w + c, P::kBranchLd},
                                [=](float go, float wo) { return (alpha * go) * wo; });
            dstate[row + in + c] = dstate[row + in + c] + acc.join() * model::relu_mask(x);
        }
    });
}

// Shared-memory pointers of one rows block.
struct RowsScratch {
    float* weights;  // null: read the parameters in global memory
    float* state;
    float* dstate;
    float* scores;
    float* exps;  // e^(score - the row's largest), the softmax's numerators
    float* dscores;
    std::int32_t* labels;  // the block's rows' labels, loaded with the rows
};

// Every piece a sum reads four terms a load from starts on 16 bytes: the padded parameters (whole
// 16 bytes long), then the state and dstate rows (kStateLd floats each).
RG_HD RowsScratch carve_rows(float* smem, int param_count, bool weights_shared, int rows_per_block) {
    RowsScratch s;
    s.weights = weights_shared ? smem : nullptr;
    s.state = smem + staged_floats(param_count, weights_shared);
    s.dstate = s.state + rows_per_block * kStateLd;
    s.scores = s.dstate + rows_per_block * kStateLd;
    s.exps = s.scores + rows_per_block * kClasses;
    s.dscores = s.exps + rows_per_block * kClasses;
    s.labels = reinterpret_cast<std::int32_t*>(s.dscores + rows_per_block * kClasses);
    return s;
}

inline int rows_blocks(const StepArgs& a) { return ceil_div(a.rows, a.rows_per_block); }
inline int predict_blocks(const PredictArgs& a, std::int64_t rows) {
    return static_cast<int>((rows + a.tile - 1) / a.tile);
}

// cpu::Trainer<float>::step for rows block*rows_per_block .. of the batch, up to the weight
// gradients: 16 phases at depth 2. kStaged: the parameters are copied to s.weights (shared memory,
// padded) first — unless `weights_staged`, where this shared memory already holds this step's copy
// (a cluster group's slice, at its later rows units of a step: fused_cluster.hpp) — else read where
// they are (flat). Two instantiations, so each reads its weights through one kind of load (shared,
// or global) and one layout instead of a generic one chosen at run time.
template <bool kStaged, int L, class Exec>
RG_HD void step_rows_as(Exec& ex, const StepArgs& a, int block, const RowsScratch& s, bool weights_staged) {
    using P = std::conditional_t<kStaged, PaddedParams, FlatParams>;
    const int per_block = a.rows_per_block;
    const int r0 = block * per_block;
    const int rows = a.rows - r0 < per_block ? a.rows - r0 : per_block;
    const int ld = kStateLd, depth = a.depth, batch = a.rows;
    const float alpha = a.alpha;
    float* const state = s.state;
    float* const dstate = s.dstate;
    const std::size_t head_w = head_weights_at<P>(2 * depth), head_b = head_biases_at<P>(2 * depth);

    // The block's rows from the epoch order (and their labels, so that the loss phase waits for no
    // global load), and the step's copy of the parameters. The rows and labels are the task's inputs
    // and the epoch's order, which no step writes, so where a step follows a step
    // (gather_before_wait) their copies are issued before the wait for the previous kernel
    // (launched with Programmatic Dependent Launch, this kernel starts while the previous step's
    // grads kernel runs; launched plainly, the wait is nothing); the parameters, which that kernel
    // updates, after it. One phase: its end waits for both.
    {
        if (!a.gather_before_wait) ex.wait_for_prior_grid();
        const StepArgs g = a;
        std::int32_t* const labels = s.labels;
        ex.issue(rows * kPairs, [=](int item) {
            const unsigned int r = static_cast<unsigned int>(item) / kPairs,
                               pair = static_cast<unsigned int>(item) - r * kPairs;
            const std::int64_t src = load_l2(g.order + g.first + r0 + r);
            row_pair_item(state, ld, g.train_rows + src * kFeatures, r, pair);
            if (pair == 0) copy_async4(labels + r, g.train_labels + src);
        });
        if (a.gather_before_wait) ex.wait_for_prior_grid();
        const PaddedCopy weights =
            kStaged && !weights_staged ? padded_copy(s.weights, a.params, a.param_count) : PaddedCopy{};
        ex.phase(weights.items(), [=](int item) { copy_item(weights, item); });
    }
    const float* const w = kStaged ? s.weights : a.params;

    // Forward; then the scores, and the final state for the head's weight gradient.
    core_forward<P, L>(ex, w, depth, alpha, state, ld, rows);
    {
        float* scores = s.scores;
        float* final_state = a.final_state + r0;
        const int slot = a.slot;
        const int score_items = rows * kClasses;
        ex.phase(score_items + rows * kFeatures, [=](int item) {
            if (item < score_items) {
                const int r = item / kClasses, j = item - r * kClasses;
                scores[r * kClasses + j] =
                    head_score<P, L>(w + head_w, w + head_b, state + static_cast<std::size_t>(r) * ld, j);
            } else {
                const int k = item - score_items;
                const int r = k / kFeatures, c = k - r * kFeatures;
                final_state[column_major(slot, c, r)] = state[static_cast<std::size_t>(r) * ld + padded_column(c)];
            }
        });
    }
    // The mean cross-entropy gradient of each row (over the whole batch's rows): model::
    // softmax_xent_grad_row's steps (its row sum in L lanes, as softmax_xent_grad_row_lanes) with a
    // thread a class, in two phases (the sum needs every class's exponential). With a thread a row it
    // was the rows kernel's longest phase (bench/NOTES.md, "A cuda-fused step, phase by phase").
    {
        const float* scores = s.scores;
        float* exps = s.exps;
        ex.phase(rows * kClasses, [=](int item) {
            const int r = item / kClasses, j = item - r * kClasses;
            const float* row = scores + r * kClasses;
            exps[r * kClasses + j] = model::softmax_exp(row[j] - model::row_max(row));
        });
    }
    {
        const StepArgs g = a;
        const float* exps = s.exps;
        float* dscores = s.dscores;
        const std::int32_t* labels = s.labels;
        ex.phase(rows * kClasses, [=](int item) {
            const int r = item / kClasses, j = item - r * kClasses;
            const float* e = exps + r * kClasses;
            const float sum = model::lane_sum<L, float>(kClasses, [=](int k) { return e[k]; });  // the row's sum
            const float d = model::xent_grad(e[j], sum, j == labels[r], model::inverse_rows<float>(batch));
            dscores[r * kClasses + j] = d;
            g.dscores[column_major(g.slot, j, r0 + r)] = d;
        });
    }
    // dstate = dscores H, the reference's order over the 10 classes.
    {
        const float* ds = s.dscores;
        const float* hw = w + head_w;
        ex.phase(rows * kFeatures, [=](int item) {
            const int r = item / kFeatures, i = item - r * kFeatures;
            const float* d_row = ds + r * kClasses;
            const int h = P::head_column(i);
            LaneSums<L> acc;
            ordered_sum<kClasses>(
                acc, [=](int j) { return d_row[j]; }, [=](int j) { return hw[j * P::kHeadLd + h]; },
                [](float dj, float hj) { return dj * hj; });
            dstate[static_cast<std::size_t>(r) * ld + padded_column(i)] = acc.join();
        });
    }

    // docs/spec.md §4, block k = D-1 .. 0: rebuild r, G's rows; rebuild l, F's rows. Block 0 skips the
    // rebuild of l and F's input gradient: they serve only the gradient of the core input.
    const auto act_slot = [&](int b) { return a.act_stack + column_major(a.slot, b * kHalf, r0); };
    const auto grad_slot = [&](int b) { return a.grad_stack + column_major(a.slot, b * kHalf, r0); };
    for (int k = depth - 1; k >= 0; --k) {
        if (k == 0) ex.launch_dependents();  // the last block's backward: the grads kernel may be scheduled
        const int f = 2 * k, g = 2 * k + 1;
        const float* wf = w + branch_at<P>(f);
        const float* wg = w + branch_at<P>(g);
        couple<P, L>(ex, wg, state, ld, rows, 0, kPaddedHalf, -1.0f, alpha);
        branch_rows<P, L>(ex, wg, state, dstate, ld, rows, 0, kPaddedHalf, alpha, true, a.slot, act_slot(g),
                          grad_slot(g));
        if (k > 0) couple<P, L>(ex, wf, state, ld, rows, kPaddedHalf, 0, -1.0f, alpha);
        branch_rows<P, L>(ex, wf, state, dstate, ld, rows, kPaddedHalf, 0, alpha, k > 0, a.slot, act_slot(f),
                          grad_slot(f));
    }
}

// L: the sum order, which a.sum_lanes names for the host code that picks the instantiation.
// weights_staged: s.weights already holds this step's parameters (see step_rows_as).
template <int L = kSumLanes, class Exec>
RG_HD void step_rows(Exec& ex, const StepArgs& a, int block, const RowsScratch& s, bool weights_staged = false) {
    if (s.weights != nullptr)
        step_rows_as<true, L>(ex, a, block, s, weights_staged);
    else
        step_rows_as<false, L>(ex, a, block, s, false);
}

// ---- the grads kernel --------------------------------------------------------------------------

// The parameters a grads block owns: outputs out0 .. out0+outs-1 of one branch (x 41 inputs) or of
// the head (x 82), and in the head's last block also the 10 biases.
struct GradsBlock {
    int branch = -1;      // branch index, or -1 for the head
    int out0 = 0;         // first output (branch: o, head: class j)
    int outs = 0;         // outputs in this block
    bool biases = false;  // head only: the 10 biases follow the weights
};

RG_HD int grads_blocks(int depth) {
    return 2 * depth * ceil_div(kHalf, kBranchOutGroup) + ceil_div(kClasses, kHeadOutGroup);
}

RG_HD GradsBlock grads_block(int block, int depth) {
    GradsBlock b;
    const int per_branch = ceil_div(kHalf, kBranchOutGroup);
    if (block < 2 * depth * per_branch) {
        b.branch = block / per_branch;
        b.out0 = (block - b.branch * per_branch) * kBranchOutGroup;
        b.outs = kHalf - b.out0 < kBranchOutGroup ? kHalf - b.out0 : kBranchOutGroup;
    } else {
        const int h = block - 2 * depth * per_branch;
        b.out0 = h * kHeadOutGroup;
        b.outs = kClasses - b.out0 < kHeadOutGroup ? kClasses - b.out0 : kHeadOutGroup;
        b.biases = b.out0 + b.outs == kClasses;
    }
    return b;
}

// Every gradient of the block's parameters, Σ over the batch's rows in the trainer's order (row r into
// lane r mod L), staged through shared memory kGradsChunk rows at a time (each item's lanes wait in
// `acc` between chunks, so the order is the reference's), then SGD on each of them. Branch item t = (o, i): dW[o][i] =
// Σ_r α·g[r][o] relu(x[r][i]); head item t = (j, i): dH[j][i] = Σ_r dscores[r][j] state[r][i]; bias
// item: db[j] = Σ_r dscores[r][j].
// A chunk is staged column by column (the stacks, the final state and dscores are column-major:
// column_major), each column kGradsStride floats apart, so a sum reads four rows of each operand a
// 16-byte load (ordered_sum4_n), still adding them one by one, each into its lane, in row order.
// kHead: the head's block (82 inputs an output) or a branch's (41): two instantiations, so the
// width is a constant and no item divides by a runtime value.
template <bool kHead, int L, class Exec>
RG_HD void step_grads_as(Exec& ex, const StepArgs& a, const GradsBlock gb, float* smem) {
    constexpr int width = kHead ? kFeatures : kHalf;  // inputs per output
    const int weight_items = gb.outs * width;
    const int items = weight_items + (gb.biases ? kClasses : 0);
    const std::size_t head_w = static_cast<std::size_t>(2 * a.depth) * kBranchSize;
    // A staged chunk: `width` columns of in (relu(x), or the final state), then `out_cols` columns of
    // outv (α·g of the block's outputs, or dscores: of its classes, or of all 10 in the bias block).
    const int out_first = gb.biases ? 0 : gb.out0;
    const int out_cols = gb.biases ? kClasses : gb.outs;
    const int slot = a.slot;
    // The sources' first columns: the final state's, or the branch's stack's; the block's first
    // output's α·g, or its first class's dscores.
    const float* const in_source = kHead ? a.final_state : a.act_stack + column_major(slot, gb.branch * kHalf, 0);
    const float* const out_source = kHead ? a.dscores + column_major(slot, out_first, 0)
                                          : a.grad_stack + column_major(slot, gb.branch * kHalf + gb.out0, 0);
    // The block's parameters are one run: its outputs' rows of weights (and, in the bias block, the
    // biases, which follow the head's last row); item t is parameter p0 + t.
    const std::size_t p0 =
        kHead ? head_w + static_cast<std::size_t>(gb.out0) * kFeatures
              : static_cast<std::size_t>(gb.branch) * kBranchSize + static_cast<std::size_t>(gb.out0) * kHalf;
    float* const acc = smem;  // lane l of item t's running sums at l·kGradsAccFloats + t
    float* const in = smem + L * kGradsAccFloats;
    float* const outv = in + width * kGradsStride;
    using Columns = ColumnCopy<kGradsChunk, kGradsStride>;
    for (int c0 = 0; c0 < a.rows; c0 += kGradsChunk) {
        const int n = a.rows - c0 < kGradsChunk ? a.rows - c0 : kGradsChunk;
        const bool last = c0 + kGradsChunk >= a.rows;
        {
            const Columns in_copy{in, in_source + c0, static_cast<std::size_t>(slot), n, width};
            const Columns out_copy{outv, out_source + c0, static_cast<std::size_t>(slot), n, out_cols};
            const int in_items = in_copy.items();
            ex.phase(in_items + out_copy.items(), [=](int item) {
                if (item < in_items)
                    copy_item(in_copy, item);
                else
                    copy_item(out_copy, item - in_items);
            });
        }
        // After the last staging, before the sums and SGD: the next rows kernel may be scheduled (it
        // gathers its rows while this one sums).
        if (last) ex.launch_dependents();
        const StepArgs g = a;
        ex.phase(items, [=](int t) {
            // The last chunk's item ends with the parameter's SGD: its parameter and momentum are
            // loaded first, so they arrive while the sum runs.
            float p = 0, v = 0;
            if (last) {
                p = load_l2(g.params + p0 + t);
                v = load_l2(g.velocity + p0 + t);
            }
            // The lanes go on from where the last chunk left them (a chunk is whole rounds of the lanes).
            LaneSums<L> lanes;
            if (c0 != 0) {
                RG_DEVICE_UNROLL
                for (int l = 0; l < L; ++l) lanes.v[l] = acc[l * kGradsAccFloats + t];
            }
            if (t < weight_items) {
                const int o = t / width, i = t - o * width;
                const int col = gb.out0 + o - out_first;
                ordered_sum4_n<kGradsSumBlock>(lanes, n, AlignedRun{outv + col * kGradsStride},
                                               AlignedRun{in + i * kGradsStride},
                                               [](float gr, float x) { return gr * x; });
            } else {
                const AlignedRun d{outv + (t - weight_items) * kGradsStride};
                ordered_sum4_n<kGradsSumBlock>(lanes, n, d, d, [](float gr, float) { return gr; });
            }
            if (!last) {
                RG_DEVICE_UNROLL
                for (int l = 0; l < L; ++l) acc[l * kGradsAccFloats + t] = lanes.v[l];
                return;
            }
            const float s = lanes.join();
            model::sgd_update(p, v, s, g.lr, g.momentum, g.weight_decay);
            g.grads[p0 + t] = s;
            g.params[p0 + t] = p;
            g.velocity[p0 + t] = v;
        });
    }
}

// smem: grads_floats(L) floats.
template <int L = kSumLanes, class Exec>
RG_HD void step_grads(Exec& ex, const StepArgs& a, int block, float* smem) {
    const GradsBlock gb = grads_block(block, a.depth);
    if (gb.branch < 0)
        step_grads_as<true, L>(ex, a, gb, smem);
    else
        step_grads_as<false, L>(ex, a, gb, smem);
}

// ---- prediction of one tile of query rows --------------------------------------------------------

// kStaged as in step_rows_as: the parameters copied to `weights` (shared memory, padded) first, or
// read where they are (flat). `state`: predict_state_at.
template <bool kStaged, int L, class Exec>
RG_HD void predict_tile_as(Exec& ex, const PredictArgs& a, std::int64_t total_rows, int block, float* weights,
                           float* state) {
    using P = std::conditional_t<kStaged, PaddedParams, FlatParams>;
    const std::int64_t first = static_cast<std::int64_t>(block) * a.tile;
    const int rows = total_rows - first < a.tile ? static_cast<int>(total_rows - first) : a.tile;
    const int ld = kStateLd;
    {
        const float* const query = a.query_rows + first * kFeatures;
        const int load_items = rows * kPairs;
        const PaddedCopy wc = kStaged ? padded_copy(weights, a.params, a.param_count) : PaddedCopy{};
        ex.phase(load_items + wc.items(), [=](int item) {
            if (item < load_items) {
                const unsigned int r = static_cast<unsigned int>(item) / kPairs,
                                   pair = static_cast<unsigned int>(item) - r * kPairs;
                row_pair_item(state, ld, query + static_cast<std::size_t>(r) * kFeatures, r, pair);
            } else {
                copy_item(wc, item - load_items);
            }
        });
    }
    const float* const w = kStaged ? weights : a.params;
    const std::size_t head_w = head_weights_at<P>(2 * a.depth), head_b = head_biases_at<P>(2 * a.depth);
    core_forward<P, L>(ex, w, a.depth, a.alpha, state, ld, rows);
    float* scores = a.scores + first * kClasses;
    ex.phase(rows * kClasses, [=](int item) {
        const int r = item / kClasses, j = item - r * kClasses;
        scores[r * kClasses + j] =
            head_score<P, L>(w + head_w, w + head_b, state + static_cast<std::size_t>(r) * ld, j);
    });
    std::int64_t* pred = a.predictions + first;
    ex.phase(rows, [=](int r) { pred[r] = model::argmax_row(scores + r * kClasses); });
}

template <int L = kSumLanes, class Exec>
RG_HD void predict_tile(Exec& ex, const PredictArgs& a, std::int64_t total_rows, int block, float* weights,
                        float* state) {
    if (weights != nullptr)
        predict_tile_as<true, L>(ex, a, total_rows, block, weights, state);
    else
        predict_tile_as<false, L>(ex, a, total_rows, block, weights, state);
}

}  // namespace revgraph::cuda::fused
