// The fast CPU backend's kernels and step pipeline, written once over a SIMD traits type.
// Included by fast_portable.cpp, fast_avx2.cpp and fast_avx512.cpp inside an anonymous
// namespace after each defines `struct Simd` (and, for the SIMD ones, inside a target pragma
// region, so every function here is compiled for that instruction set and no other TU sees it).
//
// Simd provides: V (vector of W floats), the blocking constants k1_mr/k1_nr (rows x vectors of
// the broadcast kernel) and k2_mr/k2_nr (rows x rows of the dot kernel), and zero, set1, bcast,
// load, store, loadn/storen (first n lanes, the rest zero / untouched), fmadd(a,b,c) = a*b+c,
// add, sub, mul, div, max, relu, pos_select(m, v) = v where m > 0 else 0, onehot(lab, j),
// exp, kLanes (partial sums per reduction along the batch, a multiple of W),
// hsum_group(v, out): out[i] = the sum of the kLanes lanes held by v[i*G .. i*G+G-1] (G = kLanes/W
// vectors, lane j of vector g is partial sum g*W + j) for i < kGroup, in one fixed tree, and
// transpose(r): an in-place W x W transpose of W vectors.
//
// Every reduction has a fixed order that depends only on the batch size and kLanes, never on
// timing, so a run gives the same bits every time; there are no threads. AVX-512, AVX2 and
// portable+fma all use 16 lanes, FMA, the same tree and the same exponential, so they give the same
// bits as each other (the plain portable kernels, without FMA, give their own).
//
// Requires: <algorithm>, <cstddef>, <cstdint>, engine/cpu/fast_kernels.hpp,
// engine/model/layout.hpp, all included before the target region.

using V = Simd::V;
constexpr int W = Simd::W;
constexpr int kC = model::kClasses;
constexpr int kP = model::kPixels;
// The width (Workspace::width, 82 for rev88) and its half are run-time values: every loop over
// features already had a run-time trip count (the k of K1, the rows of K2), so rev88 pays nothing.

// Register blocks live in registers only if every loop over them is unrolled.
#define RG_UNROLL _Pragma("GCC unroll 64")

inline V load_part(const float* p, bool part, int n) { return part ? Simd::loadn(p, n) : Simd::load(p); }
inline void store_part(float* p, V v, bool part, int n) {
    if (part)
        Simd::storen(p, v, n);
    else
        Simd::store(p, v);
}

// ---------------------------------------------------------------------------------------------
// K1, the broadcast kernel: for m < M and columns c < N,
//     acc[m][c] = sum_k a(m, k) * x[k][c],   a(m, k) = a[m*sam + k*sak]
// then one of the epilogues below. With (sam, sak) = (h, 1) a is W (h x h), with (1, h) it is Wᵀ.
// Register block: MR rows x NR vectors of accumulators; a scalars are broadcast, x rows loaded
// once per k and reused across the MR rows.
enum Epilogue {
    kAccum,      // y += s*acc
    kAccumRelu,  // y += s*acc; relu_out = relu(y)        (coupling step, feeding the next one)
    kAccumMask,  // y += s*(acc masked by mask > 0)       (input gradient through a relu)
    kStoreBias,  // y = acc + bias[m]                     (head scores)
    kStore,      // y = acc                               (head input gradient)
};

struct K1 {
    const float* a;
    std::ptrdiff_t sam, sak;
    int k;
    const float* x;
    std::ptrdiff_t ldx;
    float* y;
    std::ptrdiff_t ldy;
    float s;
    const float* mask;
    std::ptrdiff_t ldm;
    float* relu_out;
    std::ptrdiff_t ldr;
    const float* bias;
};

// TAIL: the last of the NR vectors holds only `tail` columns (masked loads and stores).
template <int E, int MR, int NR, bool TAIL>
inline void k1_block(const K1& g, int m0, std::ptrdiff_t c0, int tail) {
    V acc[MR][NR];
    RG_UNROLL
    for (int m = 0; m < MR; ++m) RG_UNROLL
    for (int n = 0; n < NR; ++n) acc[m][n] = Simd::zero();
    const float* ap = g.a + m0 * g.sam;
    const float* xp = g.x + c0;
    const std::ptrdiff_t sam = g.sam, sak = g.sak, ldx = g.ldx;
    const int kend = g.k;
    // Per k: MR broadcasts, then one x vector at a time, so that MR*NR accumulators + MR + 1
    // registers suffice (16 for AVX2's 3 x 4 block).
    for (int k = 0; k < kend; ++k, ap += sak, xp += ldx) {
        V av[MR];
        RG_UNROLL
        for (int m = 0; m < MR; ++m) av[m] = Simd::bcast(ap + m * sam);
        RG_UNROLL
        for (int n = 0; n < NR; ++n) {
            const V xv = load_part(xp + n * W, TAIL && n == NR - 1, tail);
            RG_UNROLL
            for (int m = 0; m < MR; ++m) acc[m][n] = Simd::fmadd(av[m], xv, acc[m][n]);
        }
    }
    const V s = Simd::set1(g.s);
    RG_UNROLL
    for (int m = 0; m < MR; ++m) {
        const std::ptrdiff_t row = m0 + m;
        RG_UNROLL
        for (int n = 0; n < NR; ++n) {
            const bool part = TAIL && n == NR - 1;
            const std::ptrdiff_t col = c0 + n * W;
            float* yp = g.y + row * g.ldy + col;
            V v = acc[m][n];
            if constexpr (E == kStoreBias) {
                v = Simd::add(v, Simd::set1(g.bias[row]));
            } else if constexpr (E != kStore) {
                if constexpr (E == kAccumMask)
                    v = Simd::pos_select(load_part(g.mask + row * g.ldm + col, part, tail), v);
                v = Simd::fmadd(v, s, load_part(yp, part, tail));
            }
            store_part(yp, v, part, tail);
            if constexpr (E == kAccumRelu) store_part(g.relu_out + row * g.ldr + col, Simd::relu(v), part, tail);
        }
    }
}

template <int E, int MR, bool TAIL, int NR>
inline void k1_pick_nr(const K1& g, int m0, std::ptrdiff_t c0, int tail, int nr) {
    if constexpr (NR > 0) {
        if (nr == NR)
            k1_block<E, MR, NR, TAIL>(g, m0, c0, tail);
        else
            k1_pick_nr<E, MR, TAIL, NR - 1>(g, m0, c0, tail, nr);
    }
}

template <int E, int MR>
inline void k1_rows(const K1& g, int m0, int full, int tail) {
    constexpr int NR = Simd::k1_nr;
    int v = 0;
    for (; v + NR <= full; v += NR) k1_block<E, MR, NR, false>(g, m0, static_cast<std::ptrdiff_t>(v) * W, 0);
    const int rest = full - v;
    if (tail)
        k1_pick_nr<E, MR, true, NR>(g, m0, static_cast<std::ptrdiff_t>(v) * W, tail, rest + 1);
    else if (rest)
        k1_pick_nr<E, MR, false, NR>(g, m0, static_cast<std::ptrdiff_t>(v) * W, 0, rest);
}

template <int E, int MR>
inline void k1_pick_mr(const K1& g, int m0, int full, int tail, int mr) {
    if constexpr (MR > 0) {
        if (mr == MR)
            k1_rows<E, MR>(g, m0, full, tail);
        else
            k1_pick_mr<E, MR - 1>(g, m0, full, tail, mr);
    }
}

template <int E>
void k1(const K1& g, int rows, int cols) {
    constexpr int MR = Simd::k1_mr;
    const int full = cols / W, tail = cols % W;
    for (int m0 = 0; m0 < rows; m0 += MR) k1_pick_mr<E, MR>(g, m0, full, tail, std::min(MR, rows - m0));
}

// ---------------------------------------------------------------------------------------------
// K2, the dot kernel (weight gradients): out[m*ldo + n] = s * sum_{c < len} g[m][c] * p[n][c].
// Lanes accumulate along the batch; each output is reduced horizontally once at the end.
struct K2 {
    const float* g;
    std::ptrdiff_t ldg;
    const float* p;
    std::ptrdiff_t ldp;
    int len;
    float* out;
    std::ptrdiff_t ldo;
    float s;
};

// Partial sums per reduction and the vectors that hold them.
constexpr int kLanes = Simd::kLanes;
constexpr int G = kLanes / W;
static_assert(kLanes % W == 0, "kLanes must be a multiple of the vector width");

// Lanes of sub-vector g that a tail of `tail` columns (of a kLanes block) fills.
inline int tail_lanes(int tail, int g) { return std::clamp(tail - g * W, 0, W); }

template <int MR, int NR>
inline void k2_block(const K2& a, int m0, int n0) {
    V acc[MR][NR][G];
    RG_UNROLL
    for (int m = 0; m < MR; ++m) RG_UNROLL
    for (int n = 0; n < NR; ++n) RG_UNROLL
    for (int g = 0; g < G; ++g) acc[m][n][g] = Simd::zero();
    const float* gp = a.g + m0 * a.ldg;
    const float* pp = a.p + n0 * a.ldp;
    const int full = a.len / kLanes, tail = a.len % kLanes;
    const std::ptrdiff_t ldg = a.ldg, ldp = a.ldp;
    std::ptrdiff_t c = 0;
    for (int v = 0; v < full; ++v, c += kLanes) {
        RG_UNROLL
        for (int g = 0; g < G; ++g) {  // one sub-vector at a time: MR + 1 loads live
            V gv[MR];
            RG_UNROLL
            for (int m = 0; m < MR; ++m) gv[m] = Simd::load(gp + m * ldg + c + g * W);
            RG_UNROLL
            for (int n = 0; n < NR; ++n) {
                const V pv = Simd::load(pp + n * ldp + c + g * W);
                RG_UNROLL
                for (int m = 0; m < MR; ++m) acc[m][n][g] = Simd::fmadd(gv[m], pv, acc[m][n][g]);
            }
        }
    }
    if (tail) {  // kept out of the loop above, whose accumulators must stay in registers; every
                 // sub-vector takes its multiply-add, with zeros past the tail, as a full-width one would
        RG_UNROLL
        for (int g = 0; g < G; ++g) {
            const int lanes = tail_lanes(tail, g);
            V gv[MR];
            RG_UNROLL
            for (int m = 0; m < MR; ++m) gv[m] = Simd::loadn(gp + m * ldg + c + g * W, lanes);
            RG_UNROLL
            for (int n = 0; n < NR; ++n) {
                const V pv = Simd::loadn(pp + n * ldp + c + g * W, lanes);
                RG_UNROLL
                for (int m = 0; m < MR; ++m) acc[m][n][g] = Simd::fmadd(gv[m], pv, acc[m][n][g]);
            }
        }
    }
    // Reduce every accumulator to its sum, kGroup at a time (the tail group padded with zeros).
    constexpr int kG = Simd::kGroup;
    constexpr int kAcc = MR * NR;
    constexpr int kGroups = (kAcc + kG - 1) / kG;
    V flat[kGroups * kG * G];
    RG_UNROLL
    for (int i = 0; i < kGroups * kG; ++i) RG_UNROLL
    for (int g = 0; g < G; ++g) flat[i * G + g] = i < kAcc ? acc[i / NR][i % NR][g] : Simd::zero();
    RG_UNROLL
    for (int gi = 0; gi < kGroups; ++gi) {
        float r[kG];
        Simd::hsum_group(flat + gi * kG * G, r);
        RG_UNROLL
        for (int j = 0; j < kG; ++j) {
            const int i = gi * kG + j;
            if (i < kAcc) a.out[(m0 + i / NR) * a.ldo + n0 + i % NR] = a.s * r[j];
        }
    }
}

template <int MR, int NR>
inline void k2_pick_nr(const K2& a, int m0, int n0, int nr) {
    if constexpr (NR > 0) {
        if (nr == NR)
            k2_block<MR, NR>(a, m0, n0);
        else
            k2_pick_nr<MR, NR - 1>(a, m0, n0, nr);
    }
}

template <int MR>
inline void k2_rows(const K2& a, int m0, int cols) {
    constexpr int NR = Simd::k2_nr;
    int n0 = 0;
    for (; n0 + NR <= cols; n0 += NR) k2_block<MR, NR>(a, m0, n0);
    if (n0 < cols) k2_pick_nr<MR, NR>(a, m0, n0, cols - n0);
}

template <int MR>
inline void k2_pick_mr(const K2& a, int m0, int cols, int mr) {
    if constexpr (MR > 0) {
        if (mr == MR)
            k2_rows<MR>(a, m0, cols);
        else
            k2_pick_mr<MR - 1>(a, m0, cols, mr);
    }
}

void k2(const K2& a, int rows, int cols) {
    constexpr int MR = Simd::k2_mr;
    for (int m0 = 0; m0 < rows; m0 += MR) k2_pick_mr<MR>(a, m0, cols, std::min(MR, rows - m0));
}

// ---------------------------------------------------------------------------------------------
// Element-wise pieces.

void relu_rows(const float* src, std::ptrdiff_t lds, float* dst, std::ptrdiff_t ldd, int rows, int cols) {
    const int full = cols / W, tail = cols % W;
    for (int r = 0; r < rows; ++r) {
        const float* s = src + r * lds;
        float* d = dst + r * ldd;
        for (int v = 0; v < full; ++v) Simd::store(d + v * W, Simd::relu(Simd::load(s + v * W)));
        if (tail) Simd::storen(d + full * W, Simd::relu(Simd::loadn(s + full * W, tail)), tail);
    }
}

// dscores = (softmax(scores) - onehot(label)) * inv_rows, column by column (docs/spec.md §3).
void softmax_grad(const float* scores, float* dscores, const float* labels, std::ptrdiff_t ld, int cols,
                  float inv_rows) {
    const int full = cols / W, tail = cols % W;
    const V scale = Simd::set1(inv_rows);
    for (int v = 0; v <= full; ++v) {
        const bool part = v == full;
        if (part && tail == 0) break;
        const std::ptrdiff_t c = static_cast<std::ptrdiff_t>(v) * W;
        V s[kC];
        RG_UNROLL
        for (int j = 0; j < kC; ++j) s[j] = load_part(scores + j * ld + c, part, tail);
        V mx = s[0];
        RG_UNROLL
        for (int j = 1; j < kC; ++j) mx = Simd::max(mx, s[j]);
        V sum = Simd::zero();
        RG_UNROLL
        for (int j = 0; j < kC; ++j) {
            s[j] = Simd::exp(Simd::sub(s[j], mx));
            sum = Simd::add(sum, s[j]);
        }
        const V lab = load_part(labels + c, part, tail);
        RG_UNROLL
        for (int j = 0; j < kC; ++j) {
            const V p = Simd::div(s[j], sum);
            store_part(dscores + j * ld + c, Simd::mul(Simd::sub(p, Simd::onehot(lab, static_cast<float>(j))), scale),
                       part, tail);
        }
    }
}

// out[j] = sum_c x[j][c] for the head bias gradient, in kLanes partial sums like K2.
void row_sums(const float* x, std::ptrdiff_t ld, int rows, int cols, float* out) {
    const int full = cols / kLanes, tail = cols % kLanes;
    for (int j = 0; j < rows; ++j) {
        const float* p = x + j * ld;
        V group[Simd::kGroup * G];
        for (int i = 0; i < Simd::kGroup * G; ++i) group[i] = Simd::zero();
        for (int v = 0; v < full; ++v)
            for (int g = 0; g < G; ++g) group[g] = Simd::add(group[g], Simd::load(p + v * kLanes + g * W));
        if (tail)
            for (int g = 0; g < G; ++g)
                group[g] = Simd::add(group[g], Simd::loadn(p + full * kLanes + g * W, tail_lanes(tail, g)));
        float r[Simd::kGroup];
        Simd::hsum_group(group, r);
        out[j] = r[0];
    }
}

// torch.optim.SGD (dampening 0, no Nesterov), with the reference's roundings: no fusion.
void sgd(Workspace& w) {
    const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(w.parameter_count);
    const V lr = Simd::set1(w.learning_rate), mom = Simd::set1(w.momentum), wd = Simd::set1(w.weight_decay);
    const bool decay = w.weight_decay != 0.0f;
    for (std::ptrdiff_t i = 0; i < n; i += W) {
        const bool part = i + W > n;
        const int left = static_cast<int>(n - i);
        const V p = load_part(w.params + i, part, left);
        V d = load_part(w.grads + i, part, left);
        if (decay) d = Simd::add(d, Simd::mul(wd, p));
        const V v = Simd::add(Simd::mul(mom, load_part(w.velocity + i, part, left)), d);
        store_part(w.velocity + i, v, part, left);
        store_part(w.params + i, Simd::sub(p, Simd::mul(lr, v)), part, left);
    }
}

// ---------------------------------------------------------------------------------------------
// The model on feature-major states: left = rows 0 .. h-1, right = rows h .. 2h-1 (h = w.half).

// Branch i's h x h matrix in the flat parameter buffer (model::Layout order).
inline const float* branch(const Workspace& w, int i) {
    return w.params + static_cast<std::ptrdiff_t>(i) * w.half * w.half;
}

// y += s * (relu(x) Wᵀ) with relu(x) given, W h x h; optionally writes relu of the new y.
void couple(const float* wt, int h, const float* relu_x, float* y, float* relu_y, std::ptrdiff_t ld, int cols,
            float s) {
    const K1 g{wt, h, 1, h, relu_x, ld, y, ld, s, nullptr, 0, relu_y, ld, nullptr};
    if (relu_y != nullptr)
        k1<kAccumRelu>(g, h, cols);
    else
        k1<kAccum>(g, h, cols);
}

// Core forward in place; relu_l and relu_r are scratch.
void core_forward(const Workspace& w, float* state, std::ptrdiff_t ld, float* relu_l, float* relu_r, int cols) {
    const int h = w.half;
    float* left = state;
    float* right = state + h * ld;
    relu_rows(right, ld, relu_r, ld, h, cols);
    for (int k = 0; k < w.depth; ++k) {
        couple(branch(w, 2 * k), h, relu_r, left, relu_l, ld, cols, w.alpha);  // left += α F(right)
        couple(branch(w, 2 * k + 1), h, relu_l, right, k + 1 < w.depth ? relu_r : nullptr, ld, cols,
               w.alpha);  // right += α G(left)
    }
}

void head_forward(const Workspace& w, const float* state, std::ptrdiff_t ld, float* scores, int cols) {
    const K1 g{
        w.params + w.head_weight_offset, w.width, 1, w.width, state, ld, scores, ld, 0.0f, nullptr, 0, nullptr, 0,
        w.params + w.head_bias_offset};
    k1<kStoreBias>(g, kC, cols);
}

// ---------------------------------------------------------------------------------------------
// The three operations of the backend.

// docs/spec.md §2's lift of W consecutive pixels: 4x (exact), then - 0.5, rounded once, as the reference.
inline V lift(V x) { return Simd::sub(Simd::mul(x, Simd::set1(4.0f)), Simd::set1(0.5f)); }

void normalize(Workspace& w) {
    // Training rows stay example-major (each step gathers whole rows by the permutation).
    for (std::int64_t i = 0; i < w.train_count; ++i) {
        const float* px = w.train_pixels + i * kP;
        float* row = w.train_rows + i * w.width;
        int f = 0;
        for (; f + W <= kP; f += W) Simd::store(row + f, lift(Simd::load(px + f)));
        for (; f < kP; ++f) {
            const float scaled = px[f] * 4.0f;
            row[f] = scaled - 0.5f;
        }
        std::fill(row + kP, row + w.width, 0.0f);  // the appended zeros
    }
    // Query pixels are read once, so predict() lifts them chunk by chunk as it loads them.
}

// Lifts raw pixel rows first .. first+cols-1 into feature-major dst (width x ld), W x W tiles at a
// time through registers; rows 81 .. width-1 are the appended zeros.
void lift_transposed(const float* pixels, std::int64_t first, int cols, float* dst, std::ptrdiff_t ld, int width) {
    const float* px = pixels + first * kP;
    int c0 = 0;
    for (; c0 + W <= cols; c0 += W) {
        int f = 0;
        for (; f + W <= kP; f += W) {
            V r[W];
            for (int i = 0; i < W; ++i) r[i] = lift(Simd::load(px + (c0 + i) * kP + f));
            Simd::transpose(r);
            for (int j = 0; j < W; ++j) Simd::store(dst + (f + j) * ld + c0, r[j]);
        }
        for (; f < kP; ++f)
            for (int i = 0; i < W; ++i) {
                const float scaled = px[(c0 + i) * kP + f] * 4.0f;
                dst[f * ld + c0 + i] = scaled - 0.5f;
            }
    }
    for (; c0 < cols; ++c0)
        for (int f = 0; f < kP; ++f) {
            const float scaled = px[c0 * kP + f] * 4.0f;
            dst[f * ld + c0] = scaled - 0.5f;
        }
    for (int f = kP; f < width; ++f) std::fill_n(dst + f * ld, cols, 0.0f);
}

// Copies examples order[0..rows-1] from the example-major training rows into the feature-major
// batch state, W x W tiles at a time through registers (strided scalar stores would touch a
// cache line per value, and a power-of-two ld maps them all to a few cache sets).
void gather(Workspace& w, const std::int64_t* order, int rows) {
    const std::ptrdiff_t ld = w.ld;
    const int width = w.width;
    int c0 = 0;
    for (; c0 + W <= rows; c0 += W) {
        const float* src[W];
        for (int i = 0; i < W; ++i) src[i] = w.train_rows + order[c0 + i] * width;
        int f = 0;
        for (; f + W <= width; f += W) {
            V r[W];
            for (int i = 0; i < W; ++i) r[i] = Simd::load(src[i] + f);
            Simd::transpose(r);
            for (int j = 0; j < W; ++j) Simd::store(w.state + (f + j) * ld + c0, r[j]);
        }
        for (; f < width; ++f)
            for (int i = 0; i < W; ++i) w.state[f * ld + c0 + i] = src[i][f];
    }
    for (; c0 < rows; ++c0) {
        const float* row = w.train_rows + order[c0] * width;
        for (int f = 0; f < width; ++f) w.state[f * ld + c0] = row[f];
    }
    for (int c = 0; c < rows; ++c) w.labels[c] = static_cast<float>(w.train_labels[order[c]]);
}

void step(Workspace& w, const std::int64_t* order, int rows) {
    const std::ptrdiff_t ld = w.ld;
    const int h = w.half, f = w.width;
    const std::ptrdiff_t branch_size = static_cast<std::ptrdiff_t>(h) * h;
    float* left = w.state;
    float* right = w.state + h * ld;
    float* dleft = w.dstate;
    float* dright = w.dstate + h * ld;

    // Gather the batch into the one retained buffer.
    gather(w, order, rows);

    // Forward. Only w.state carries activations on to the backward.
    core_forward(w, w.state, ld, w.relu_l, w.relu_r, rows);
    head_forward(w, w.state, ld, w.scores, rows);
    softmax_grad(w.scores, w.dscores, w.labels, ld, rows, 1.0f / static_cast<float>(rows));

    // Head backward: weight and bias gradients, and the gradient of the final core state.
    k2(K2{w.dscores, ld, w.state, ld, rows, w.grads + w.head_weight_offset, f, 1.0f}, kC, f);
    row_sums(w.dscores, ld, kC, rows, w.grads + w.head_bias_offset);
    const K1 hb{
        w.params + w.head_weight_offset, 1, f, kC, w.dscores, ld, w.dstate, ld, 0.0f, nullptr, 0, nullptr, 0, nullptr};
    k1<kStore>(hb, f, rows);

    // Core backward by reconstruction (docs/spec.md §4), blocks in reverse. relu_l/relu_r are rebuilt
    // from the state itself, then kept current by the coupling steps' epilogues.
    relu_rows(left, ld, w.relu_l, ld, h, rows);
    const float a = w.alpha;
    for (int k = w.depth - 1; k >= 0; --k) {
        const float* wf = branch(w, 2 * k);
        const float* wg = branch(w, 2 * k + 1);
        float* dwf = w.grads + (2 * k) * branch_size;
        float* dwg = w.grads + (2 * k + 1) * branch_size;
        // G branch: rebuild right; dWg = α dRᵀ relu(l); dL += α (dR Wg) ⊙ [l > 0].
        couple(wg, h, w.relu_l, right, w.relu_r, ld, rows, -a);
        k2(K2{dright, ld, w.relu_l, ld, rows, dwg, h, a}, h, h);
        k1<kAccumMask>(K1{wg, 1, h, h, dright, ld, dleft, ld, a, w.relu_l, ld, nullptr, 0, nullptr}, h, rows);
        // F branch: rebuild left; dWf = α dLᵀ relu(r); dR += α (dL Wf) ⊙ [r > 0].
        // In block 0 the rebuilt left half and dR are the core input and its gradient, which
        // training never reads: those two products are skipped (a sixth of the backward).
        if (k > 0) couple(wf, h, w.relu_r, left, w.relu_l, ld, rows, -a);
        k2(K2{dleft, ld, w.relu_r, ld, rows, dwf, h, a}, h, h);
        if (k > 0)
            k1<kAccumMask>(K1{wf, 1, h, h, dleft, ld, dright, ld, a, w.relu_r, ld, nullptr, 0, nullptr}, h, rows);
    }

    sgd(w);
}

void predict(Workspace& w) {
    const std::int64_t q = w.test_count;
    const std::ptrdiff_t ld = w.pld;
    for (std::int64_t q0 = 0; q0 < q; q0 += ld) {
        const int cols = static_cast<int>(std::min<std::int64_t>(ld, q - q0));
        lift_transposed(w.test_pixels, q0, cols, w.pstate, ld, w.width);
        core_forward(w, w.pstate, ld, w.prelu_l, w.prelu_r, cols);
        head_forward(w, w.pstate, ld, w.pscores, cols);
        for (int c = 0; c < cols; ++c) {
            float* out = w.out_scores + (q0 + c) * kC;
            for (int j = 0; j < kC; ++j) out[j] = w.pscores[j * ld + c];
        }
    }
}

const Ops kOps{&normalize, &step, &predict};

#undef RG_UNROLL
