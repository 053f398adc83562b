#pragma once
// Per-operation tests of the CUDA backend's launch plan, in the spirit of ggml's test-backend-ops:
// every operation of the plan's programs (gather, lift, couple, mask, loss, sgd, argmax, gemm, the
// fused step and the fused predict, at width 82 and the any-width ones at others; the copies too) is
// run ONE AT A TIME on a backend from the
// buffers the previous one left, and its outputs are compared with the operation's math in float64
// computed here from the buffers it started from, and every element outside the ranges it declares
// with what was there (stray_writes). A kernel that computes other than its operation says, or
// writes where it should not, shows up on the operation that has it, not somewhere in a whole step.
// The math takes the operation's own fields (a product's transposes, a couple's sign, a rate): that
// the plan asks each operation for the right thing is held by the whole task against the reference
// trainer (test_plan.cpp), not here. One line per operation and shape:
//   "gemm depth=2 n=37 q=11 batch=16 width=82 emulator: ok max_err=3.1e-08 stray_writes=0 (28 launches)"
// Backends: the CPU emulator (test_ops.cpp), the GPU (test_ops_gpu.cpp, where a device exists).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/cpu/reference.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cuda::op_cases {

// Every buffer of a plan on the host, as the emulator holds them.
struct Buffers {
    std::vector<std::vector<float>> f32 = std::vector<std::vector<float>>(kBufCount);
    std::vector<std::vector<std::int32_t>> i32 = std::vector<std::vector<std::int32_t>>(kBufCount);
    std::vector<std::vector<std::int64_t>> i64 = std::vector<std::vector<std::int64_t>>(kBufCount);
    double f(Ref r, std::size_t i) const { return f32.at(static_cast<std::size_t>(r.buf)).at(r.offset + i); }
    std::int32_t n(Ref r, std::size_t i) const { return i32.at(static_cast<std::size_t>(r.buf)).at(r.offset + i); }
    std::int64_t w(Ref r, std::size_t i) const { return i64.at(static_cast<std::size_t>(r.buf)).at(r.offset + i); }
};

// A backend that runs one operation at a time on buffers it holds.
class Runner {
public:
    virtual ~Runner() = default;
    virtual const char* name() const = 0;
    virtual void load(const Buffers& b) = 0;
    virtual void run(const Program& ops) = 0;
    virtual Buffers read() = 0;
};

// Random contents for every buffer: pixels in [0, 1], parameters and scratch in [-1, 1] (branch
// weights scaled down so states stay O(1)), labels in 0..9, permutations and the order valid.
inline Buffers random_buffers(const TaskPlan& plan, std::mt19937_64& rng) {
    Buffers b;
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f), pixel(0.0f, 1.0f);
    std::uniform_int_distribution<int> label(0, model::kClasses - 1);
    const std::int64_t n = plan.train_count();
    for (int k = 0; k < kBufCount; ++k) {
        const Buf buf = static_cast<Buf>(k);
        const std::size_t count = plan.elements(buf);
        switch (buf_elem(buf)) {
            case Elem::f32: {
                auto& v = b.f32[k];
                v.resize(count);
                const bool raw = buf == Buf::train_raw || buf == Buf::query_raw;
                const bool weights = buf == Buf::params || buf == Buf::initial;
                for (auto& x : v) x = raw ? pixel(rng) : weights ? 0.2f * unit(rng) : unit(rng);
                break;
            }
            case Elem::i32: {
                auto& v = b.i32[k];
                v.resize(count);
                if (buf == Buf::permutations || buf == Buf::order) {
                    for (std::size_t e = 0; e * n < count; ++e) {
                        std::vector<std::int32_t> p(static_cast<std::size_t>(n));
                        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::int32_t>(i);
                        std::shuffle(p.begin(), p.end(), rng);
                        std::copy(p.begin(), p.end(), v.begin() + static_cast<std::ptrdiff_t>(e * n));
                    }
                } else {
                    for (auto& x : v) x = label(rng);
                }
                break;
            }
            case Elem::i64: b.i64[k].assign(count, 0); break;
        }
    }
    return b;
}

// The largest error of one operation's outputs, |got - want| / max(1, |want|); predictions count
// as 1 each where they differ from the float64 argmax and its top two are apart by more than 1e-4.
struct Check {
    double max_err = 0;
    void value(double got, double want) {
        max_err = std::max(max_err, std::abs(got - want) / std::max(1.0, std::abs(want)));
    }
};

// ---- each operation's math, in float64, from the buffers before it ran ---------------------------

inline void check_gemm(const GemmOp& op, const Buffers& in, const Buffers& out, Check& c) {
    const GemmSpec& s = op.spec;
    for (int q = 0; q < s.batch; ++q)
        for (int j = 0; j < s.n; ++j)
            for (int i = 0; i < s.m; ++i) {
                double acc = 0;
                for (int p = 0; p < s.k; ++p) {
                    const std::size_t ai = s.trans_a ? std::size_t(i) * s.lda + p : std::size_t(p) * s.lda + i;
                    const std::size_t bi = s.trans_b ? std::size_t(p) * s.ldb + j : std::size_t(j) * s.ldb + p;
                    acc += in.f(op.a, q * s.stride_a + ai) * in.f(op.b, q * s.stride_b + bi);
                }
                c.value(out.f(op.d, q * s.stride_d + std::size_t(j) * s.ldd + i), s.alpha * acc);
            }
}

inline void check_copy(const CopyOp& op, const Buffers& in, const Buffers& out, Check& c) {
    for (std::size_t i = 0; i < op.count; ++i) {
        const double want = buf_elem(op.src.buf) == Elem::f32 ? in.f(op.src, i) : in.n(op.src, i);
        const double got = buf_elem(op.dst.buf) == Elem::f32 ? out.f(op.dst, i) : out.n(op.dst, i);
        c.value(got, want);
    }
}

inline void check_zero(const ZeroOp& op, const Buffers&, const Buffers& out, Check& c) {
    for (std::size_t i = 0; i < op.count; ++i) c.value(out.f(op.dst, i), 0.0);
}

// docs/spec.md §2's lift in float64: coordinate k of row r of a raw pixel array.
inline double lifted_value(const Buffers& in, Ref raw, std::int64_t r, int k) {
    return k < model::kPixels ? 4.0 * in.f(raw, r * model::kPixels + k) - 0.5 : 0.0;
}

inline void check_lift(const LiftOp& op, const Buffers& in, const Buffers& out, Check& c) {
    const auto lifted = [&](Ref raw, Ref rows, std::int64_t count) {
        for (std::int64_t r = 0; r < count; ++r)
            for (int k = 0; k < op.width; ++k) c.value(out.f(rows, r * op.width + k), lifted_value(in, raw, r, k));
    };
    lifted(op.train_raw, op.train_rows, op.train_count);
    lifted(op.query_raw, op.query_rows, op.query_count);
}

inline void check_gather(const GatherOp& op, const Buffers& in, const Buffers& out, Check& c) {
    const int h = op.half_cols, width = 2 * h;
    for (int r = 0; r < op.rows; ++r) {
        const std::int64_t src = op.identity ? r : in.n(op.order, op.first + r);
        for (int k = 0; k < width; ++k) {
            const double v = in.f(op.src_rows, src * width + k);
            c.value(out.f(op.state, r * width + k), v);
            if (k >= h) c.value(out.f(op.act_right, r * h + k - h), std::max(v, 0.0));
        }
        if (op.with_labels) c.value(out.n(op.labels, r), in.n(op.src_labels, src));
    }
}

// The gradient extras couple and mask share: dhalf += dtmp ⊙ [h > 0] (h before any update), and
// the finished gradient copied out.
inline void check_gradient(int rows, int h, Ref half, Ref dhalf, bool masked, Ref dtmp, bool copied, Ref grad_copy,
                           const Buffers& in, const Buffers& out, Check& c) {
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k < h; ++k) {
            const std::size_t s = std::size_t(r) * 2 * h + k, i = std::size_t(r) * h + k;
            double g = in.f(dhalf, s);
            if (masked) g += in.f(dtmp, i) * (in.f(half, s) > 0 ? 1.0 : 0.0);
            if (masked) c.value(out.f(dhalf, s), g);
            if (copied) c.value(out.f(grad_copy, i), g);
        }
}

inline void check_couple(const CoupleOp& op, const Buffers& in, const Buffers& out, Check& c) {
    const int hc = op.half_cols;
    for (int r = 0; r < op.rows; ++r)
        for (int k = 0; k < hc; ++k) {
            const std::size_t s = std::size_t(r) * 2 * hc + k, i = std::size_t(r) * hc + k;
            const double h = in.f(op.half, s) + op.sign * op.alpha * in.f(op.branch, i);
            c.value(out.f(op.half, s), h);
            c.value(out.f(op.act, i), std::max(h, 0.0));
        }
    if (op.masked || op.copy_grad)
        check_gradient(op.rows, hc, op.half, op.dhalf, op.masked, op.dtmp, op.copy_grad, op.grad_copy, in, out, c);
}

inline void check_mask(const MaskOp& op, const Buffers& in, const Buffers& out, Check& c) {
    check_gradient(op.rows, op.half_cols, op.half, op.dhalf, true, op.dtmp, op.copy_grad, op.grad_copy, in, out, c);
}

// The three formulas below are written out here from docs/spec.md (§4 the loss, §5 the update and the
// prediction), not taken from engine/model/math.hpp, which the operations themselves call: a mistake
// in a shared template would otherwise be checked against itself.

// d score_j of the batch's mean cross-entropy: (softmax_j − [j = label]) / rows.
inline void xent_grad_f64(const double* s, std::int64_t label, int rows, double* d) {
    const double m = *std::max_element(s, s + model::kClasses);
    double z = 0;
    for (int j = 0; j < model::kClasses; ++j) z += std::exp(s[j] - m);
    for (int j = 0; j < model::kClasses; ++j) d[j] = (std::exp(s[j] - m) / z - (j == label ? 1.0 : 0.0)) / rows;
}

// torch.optim.SGD (dampening 0, no Nesterov): v ← momentum·v + (g + weight_decay·p); p ← p − lr·v.
inline void sgd_f64(double& p, double& v, double g, double lr, double momentum, double weight_decay) {
    v = momentum * v + (g + weight_decay * p);
    p -= lr * v;
}

inline void check_loss(const LossOp& op, const Buffers& in, const Buffers& out, Check& c) {
    std::vector<double> dbias(model::kClasses, 0.0);
    for (int r = 0; r < op.rows; ++r) {
        double s[model::kClasses], d[model::kClasses];
        for (int j = 0; j < model::kClasses; ++j) s[j] = in.f(op.scores, r * model::kClasses + j) + in.f(op.bias, j);
        xent_grad_f64(s, in.n(op.labels, r), op.rows, d);
        for (int j = 0; j < model::kClasses; ++j) {
            c.value(out.f(op.scores, r * model::kClasses + j), s[j]);
            c.value(out.f(op.dscores, r * model::kClasses + j), d[j]);
            dbias[j] += d[j];
        }
        const int h = op.half_cols;
        for (int k = 0; k < h; ++k)
            c.value(out.f(op.act_left, r * h + k), std::max(in.f(op.state, std::size_t(r) * 2 * h + k), 0.0));
    }
    for (int j = 0; j < model::kClasses; ++j) c.value(out.f(op.dbias, j), dbias[j]);
}

inline void check_sgd(const SgdOp& op, const Buffers& in, const Buffers& out, Check& c) {
    for (std::size_t i = 0; i < op.count; ++i) {
        double p = in.f(op.params, i), v = in.f(op.velocity, i);
        sgd_f64(p, v, in.f(op.grads, i), op.lr, op.momentum, op.weight_decay);
        c.value(out.f(op.params, i), p);
        c.value(out.f(op.velocity, i), v);
    }
}

// Both parts in one launch: each checked as its own operation is.
inline void check_sgd_gather(const SgdGatherOp& op, const Buffers& in, const Buffers& out, Check& c) {
    check_sgd(op.sgd, in, out, c);
    check_gather(op.gather, in, out, c);
}

// Predictions against the float64 argmax of float64 scores, the first of the largest (lowest index on
// ties); a near tie (top two within 1e-4) may go either way.
inline void check_prediction(const double* s, std::int64_t got, Check& c) {
    const std::int64_t want = std::max_element(s, s + model::kClasses) - s;
    if (got == want) return;
    if (got < 0 || got >= model::kClasses || std::abs(s[got] - s[want]) > 1e-4) c.max_err = std::max(c.max_err, 1.0);
}

inline void check_argmax(const ArgmaxOp& op, const Buffers& in, const Buffers& out, Check& c) {
    for (std::int64_t r = 0; r < op.rows; ++r) {
        double s[model::kClasses];
        for (int j = 0; j < model::kClasses; ++j) {
            s[j] = in.f(op.scores, r * model::kClasses + j) + in.f(op.bias, j);
            c.value(out.f(op.scores, r * model::kClasses + j), s[j]);
        }
        check_prediction(s, out.w(op.predictions, r), c);
    }
}

// The fused step (its rows and grads kernels together) against the float64 reference trainer's one
// SGD step on the same batch: gradients, velocity, parameters and the final core state.
inline void check_fused_step(const FusedStepOp& op, const TaskPlan& plan, const Buffers& in, const Buffers& out,
                             Check& c) {
    const cpu::Reference<double> ref(op.depth, op.alpha, model::kFeatures);
    std::vector<double> params(plan.layout().total()), input(std::size_t(op.rows) * model::kFeatures);
    std::vector<std::int64_t> labels(static_cast<std::size_t>(op.rows));
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = in.f(op.params, i);
    for (int r = 0; r < op.rows; ++r) {
        const std::int64_t src = in.n(op.order, op.first + r);
        labels[r] = in.n(op.train_labels, src);
        for (int k = 0; k < model::kFeatures; ++k)
            input[r * model::kFeatures + k] = in.f(op.train_rows, src * model::kFeatures + k);
    }
    const auto g = cpu::batch_gradients(ref, params, input, labels, cpu::BackwardMode::reconstruct);
    for (std::size_t i = 0; i < params.size(); ++i) {
        double p = params[i], v = in.f(op.velocity, i);
        sgd_f64(p, v, g.params[i], op.lr, op.momentum, op.weight_decay);
        c.value(out.f(op.grads, i), g.params[i]);
        c.value(out.f(op.velocity, i), v);
        c.value(out.f(op.params, i), p);
    }
    // The final state is column-major, `slot` rows a column (fused::column_major).
    for (int r = 0; r < op.rows; ++r)
        for (int k = 0; k < model::kFeatures; ++k)
            c.value(out.f(op.final_state, fused::column_major(op.slot, k, r)),
                    g.final_state[std::size_t(r) * model::kFeatures + k]);
}

// The fused predict against the float64 reference forward: scores and predictions.
inline void check_fused_predict(const FusedPredictOp& op, const TaskPlan& plan, const Buffers& in, const Buffers& out,
                                Check& c) {
    const cpu::Reference<double> ref(op.depth, op.alpha, model::kFeatures);
    std::vector<double> params(plan.layout().total()), state(std::size_t(op.rows) * model::kFeatures),
        scores(std::size_t(op.rows) * model::kClasses);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = in.f(op.params, i);
    for (std::size_t i = 0; i < state.size(); ++i) state[i] = in.f(op.query_rows, i);
    ref.core_forward(params.data(), state.data(), static_cast<int>(op.rows));
    ref.head_forward(params.data(), state.data(), static_cast<int>(op.rows), scores.data());
    for (std::int64_t r = 0; r < op.rows; ++r) {
        for (int j = 0; j < model::kClasses; ++j)
            c.value(out.f(op.scores, r * model::kClasses + j), scores[r * model::kClasses + j]);
        check_prediction(&scores[r * model::kClasses], out.w(op.predictions, r), c);
    }
}

// The any-width fused step (rows and grads kernels together, widths other than 82) against the float64
// reference trainer's SGD step on the same batch, its rows lifted from the raw pixels as the kernels
// lift them: gradients, velocity, parameters and the final core state.
inline void check_fused_any_step(const FusedAnyStepOp& op, const TaskPlan& plan, const Buffers& in, const Buffers& out,
                                 Check& c) {
    const int width = 2 * op.half;
    const cpu::Reference<double> ref(op.depth, op.alpha, width);
    std::vector<double> params(plan.layout().total()), input(std::size_t(op.rows) * width);
    std::vector<std::int64_t> labels(static_cast<std::size_t>(op.rows));
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = in.f(op.params, i);
    for (int r = 0; r < op.rows; ++r) {
        const std::int64_t src = in.n(op.order, op.first + r);
        labels[r] = in.n(op.train_labels, src);
        for (int k = 0; k < width; ++k) input[std::size_t(r) * width + k] = lifted_value(in, op.train_raw, src, k);
    }
    const auto g = cpu::batch_gradients(ref, params, input, labels, cpu::BackwardMode::reconstruct);
    for (std::size_t i = 0; i < params.size(); ++i) {
        double p = params[i], v = in.f(op.velocity, i);
        sgd_f64(p, v, g.params[i], op.lr, op.momentum, op.weight_decay);
        c.value(out.f(op.grads, i), g.params[i]);
        c.value(out.f(op.velocity, i), v);
        c.value(out.f(op.params, i), p);
    }
    for (std::size_t i = 0; i < g.final_state.size(); ++i) c.value(out.f(op.final_state, i), g.final_state[i]);
}

// The any-width fused predict against the float64 reference forward of the lifted query rows.
inline void check_fused_any_predict(const FusedAnyPredictOp& op, const TaskPlan& plan, const Buffers& in,
                                    const Buffers& out, Check& c) {
    const int width = 2 * op.half;
    const cpu::Reference<double> ref(op.depth, op.alpha, width);
    std::vector<double> params(plan.layout().total()), state(std::size_t(op.rows) * width),
        scores(std::size_t(op.rows) * model::kClasses);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = in.f(op.params, i);
    for (int r = 0; r < op.rows; ++r)
        for (int k = 0; k < width; ++k) state[std::size_t(r) * width + k] = lifted_value(in, op.query_raw, r, k);
    ref.core_forward(params.data(), state.data(), op.rows);
    ref.head_forward(params.data(), state.data(), op.rows, scores.data());
    for (int r = 0; r < op.rows; ++r) {
        for (int j = 0; j < model::kClasses; ++j)
            c.value(out.f(op.scores, r * model::kClasses + j), scores[std::size_t(r) * model::kClasses + j]);
        check_prediction(&scores[std::size_t(r) * model::kClasses], out.w(op.predictions, r), c);
    }
}

// ---- the driver ---------------------------------------------------------------------------------

struct Shape {
    int depth;
    std::int64_t n, q;
    int batch;
    int width = model::kFeatures;
    std::string text() const {
        return "depth=" + std::to_string(depth) + " n=" + std::to_string(n) + " q=" + std::to_string(q) +
               " batch=" + std::to_string(batch) + " width=" + std::to_string(width);
    }
};

// Random shapes (fixed seed): depth 1..3, a short last batch in most, a batch over n in some.
inline std::vector<Shape> random_shapes(std::mt19937_64& rng, int count) {
    std::vector<Shape> out{{2, 37, 11, 16}, {1, 5, 3, 8}};  // a short last batch; a batch larger than n
    std::uniform_int_distribution<int> depth(1, 3), n(2, 90), q(1, 40), batch(1, 64);
    while (static_cast<int>(out.size()) < count) out.push_back({depth(rng), n(rng), q(rng), batch(rng)});
    // Then other widths: the cuda path's operations at half widths 64 and 45, the fused path's
    // any-width kernels (a short last batch in each).
    out.push_back({2, 37, 11, 16, 128});
    out.push_back({3, 20, 7, 8, 90});
    return out;
}

// Tolerances on max_err: one float32 rounding per element where an operation adds or multiplies;
// a product's k-term float32 sum; a whole fused step or forward, several such sums deep.
inline double tolerance(const std::string& op) {
    if (op == "gemm") return 1e-5;
    if (op == "fused_step" || op == "fused_predict" || op == "fused_any_step" || op == "fused_any_predict") return 1e-4;
    return 1e-6;
}

struct Result {
    double max_err = 0;
    int launches = 0;
    std::size_t stray = 0;  // elements changed outside every range the operation declares
};

// Elements of any buffer that no access of `ops` names (read or written) and that did not come out
// bit for bit as they went in. The checks above look only at what an operation should write, so a
// write past its declared ranges (a wrong offset or extent, a collateral store) shows here. The
// ranges are the plan checker's own (accesses()), the rows read through an order counted as the
// larger of the two sets': coverage can only grow, never hide a declared range.
inline std::size_t stray_writes(const Program& ops, const TaskPlan& plan, const Buffers& before, const Buffers& after) {
    const auto source_rows = static_cast<std::size_t>(std::max(plan.train_count(), plan.test_count()));
    std::vector<std::vector<bool>> covered(kBufCount);
    for (int k = 0; k < kBufCount; ++k) covered[k].assign(plan.elements(static_cast<Buf>(k)), false);
    for (const Op& op : ops)
        for (const Access& a : accesses(op, source_rows)) {
            auto& c = covered.at(static_cast<std::size_t>(a.ref.buf));
            for (std::size_t i = a.ref.offset; i < std::min(c.size(), a.ref.offset + a.extent); ++i) c[i] = true;
        }
    std::size_t stray = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(kBufCount); ++k) {
        const auto count = [&](const auto& was, const auto& now) {
            for (std::size_t i = 0; i < covered[k].size(); ++i)
                if (!covered[k][i] && std::memcmp(&was.at(i), &now.at(i), sizeof(was[i])) != 0) ++stray;
        };
        switch (buf_elem(static_cast<Buf>(k))) {
            case Elem::f32: count(before.f32[k], after.f32[k]); break;
            case Elem::i32: count(before.i32[k], after.i32[k]); break;
            case Elem::i64: count(before.i64[k], after.i64[k]); break;
        }
    }
    return stray;
}

// Runs every program of the plan (reset, normalize, epoch 0's start, every step, the operations
// only the epoch body has, predict) one operation at a time on `runner` and checks each; returns the
// results by operation name.
inline std::map<std::string, Result> run_plan(const TaskPlan& plan, Runner& runner, std::mt19937_64& rng) {
    runner.load(random_buffers(plan, rng));
    Buffers before = runner.read();
    std::map<std::string, Result> results;
    std::vector<Program> programs{plan.reset(), plan.normalize(), plan.epoch_start(0)};
    for (std::size_t b = 0; b < plan.batches().size(); ++b) programs.push_back(plan.step(static_cast<int>(b)));
    Program body_only;  // cuda's SGD with the next gather (TaskPlan::epoch_body)
    for (const Op& op : plan.epoch_body())
        if (std::holds_alternative<SgdGatherOp>(op)) body_only.push_back(op);
    programs.push_back(body_only);
    programs.push_back(plan.predict());
    for (const Program& program : programs)
        for (std::size_t k = 0; k < program.size(); ++k) {
            Program ops{program[k]};
            // Alone, a product off the chain has no companions: on the program's stream it runs (and
            // on a GPU is bound with) the same launch.
            if (auto* g = std::get_if<GemmOp>(&ops.front())) g->beside = 0;
            const bool fused =
                std::holds_alternative<FusedStepOp>(program[k]) || std::holds_alternative<FusedAnyStepOp>(program[k]);
            if (fused) ops.push_back(program.at(++k));  // rows, then grads: one step
            runner.run(ops);
            Buffers after = runner.read();
            Check c;
            std::string name;
            std::visit(
                [&](const auto& op) {
                    using T = std::decay_t<decltype(op)>;
                    if constexpr (std::is_same_v<T, GemmOp>)
                        name = "gemm", check_gemm(op, before, after, c);
                    else if constexpr (std::is_same_v<T, CopyOp>)
                        name = "copy", check_copy(op, before, after, c);
                    else if constexpr (std::is_same_v<T, ZeroOp>)
                        name = "zero", check_zero(op, before, after, c);
                    else if constexpr (std::is_same_v<T, LiftOp>)
                        name = "lift", check_lift(op, before, after, c);
                    else if constexpr (std::is_same_v<T, GatherOp>)
                        name = "gather", check_gather(op, before, after, c);
                    else if constexpr (std::is_same_v<T, CoupleOp>)
                        name = "couple", check_couple(op, before, after, c);
                    else if constexpr (std::is_same_v<T, MaskOp>)
                        name = "mask", check_mask(op, before, after, c);
                    else if constexpr (std::is_same_v<T, LossOp>)
                        name = "loss", check_loss(op, before, after, c);
                    else if constexpr (std::is_same_v<T, SgdOp>)
                        name = "sgd", check_sgd(op, before, after, c);
                    else if constexpr (std::is_same_v<T, SgdGatherOp>)
                        name = "sgd_gather", check_sgd_gather(op, before, after, c);
                    else if constexpr (std::is_same_v<T, ArgmaxOp>)
                        name = "argmax", check_argmax(op, before, after, c);
                    else if constexpr (std::is_same_v<T, FusedStepOp>)
                        name = "fused_step", check_fused_step(op, plan, before, after, c);
                    else if constexpr (std::is_same_v<T, FusedPredictOp>)
                        name = "fused_predict", check_fused_predict(op, plan, before, after, c);
                    else if constexpr (std::is_same_v<T, FusedAnyStepOp>)
                        name = "fused_any_step", check_fused_any_step(op, plan, before, after, c);
                    else if constexpr (std::is_same_v<T, FusedAnyPredictOp>)
                        name = "fused_any_predict", check_fused_any_predict(op, plan, before, after, c);
                    else if constexpr (std::is_same_v<T, FusedEpochsOp>)
                        throw std::logic_error(
                            "op_cases: fused_epochs runs whole epochs (test_fused_cluster checks it)");
                    // A new operation fails to compile here until it has a check of its own: without
                    // one it would be counted under no name and pass unchecked.
                    else
                        static_assert(sizeof(T) == 0, "op_cases: an operation without a check");
                },
                program[fused ? k - 1 : k]);
            Result& r = results[name];
            r.max_err = std::max(r.max_err, c.max_err);
            r.stray += stray_writes(ops, plan, before, after);
            ++r.launches;
            before = std::move(after);
        }
    return results;
}

// Every shape on both paths: one line per operation and shape; returns the number of FAIL lines.
template <class MakeRunner>
int run_all(const char* backend, const MakeRunner& make_runner, int shapes) {
    std::mt19937_64 rng(20240523);
    int failures = 0;
    for (const Shape& shape : random_shapes(rng, shapes))
        for (const Path path : {Path::cublaslt, Path::fused}) {
            TaskConfig config;
            config.depth = shape.depth;
            config.width = shape.width;
            config.batch_size = shape.batch;
            config.epochs = 1;
            config.weight_decay = 1e-4;
            const TaskPlan plan(config, shape.n, shape.q, path);
            auto runner = make_runner(plan);
            for (const auto& [op, r] : run_plan(plan, *runner, rng)) {
                const bool ok = r.max_err <= tolerance(op) && r.stray == 0;
                failures += ok ? 0 : 1;
                std::printf("%s %s path=%s %s: %s max_err=%.3g stray_writes=%zu (%d launches)\n", op.c_str(),
                            shape.text().c_str(), path_name(path), backend, ok ? "ok" : "FAIL", r.max_err, r.stray,
                            r.launches);
            }
        }
    return failures;
}

}  // namespace revgraph::cuda::op_cases
