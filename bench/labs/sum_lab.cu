// bench/labs/sum_lab.cu: one phase of the fused rows kernel — the forward couple, a 41-term sum per row
// and output — written eleven ways, checked and timed side by side (a kernel lab in the manner of
// llm.c's dev/cuda: a CPU reference, numbered versions, a bit check, a table).
//
// Why: such a phase costs several times a bare chain of 41 dependent adds, even with warm code
// (bench/NOTES.md, "A cuda-fused step, phase by phase"), and 14 of the rows kernel's 16 phases are
// such sums. Whether the engine can reach 1 ms a task while it keeps the float32 CPU
// trainer's bits (versions 1-5: every sum in index order) or only by adding each sum's parts in a
// fixed tree (versions 6-11: deterministic, other bits) is a decision
// about what `cuda-fused` promises; this lab prices it in one run of a few seconds.
//
//   1 engine     fused::couple on flat rows, as the engine ran it before fused_layout.hpp: weight rows
//                of 41 floats, state rows of 83, one term a load (the baseline the others are held to)
//   2 vec4       state halves and weight rows on 16 bytes (44 floats, 3 of padding): 4 terms a load
//   3 vec4 relu  as 2, relu(x) kept beside x (written once by the item that changes x), so a term is
//                a multiply and an add
//   4-5 rows xK  as 3, a thread sums one output for K = 2 or 4 rows at once: each weight vector is
//                loaded once for K rows, and the K chains of adds interleave; still index order
//   6-8 split P  as 3, each sum split over P = 2, 4, 8 neighbouring lanes (contiguous runs of the
//                11 four-term groups), the parts added by a butterfly of shuffles: a fixed tree
//   9 acc 4      as 3, one thread a sum with four accumulators (term i into i mod 4), added as
//                (a0 + a1) + (a2 + a3): a fixed tree with no shuffles, the chain a quarter as long —
//                the 4-lane order of engine/model/sum_order.hpp
//   10-11 acc L  as 9 with L = 2 and 8 lanes: the rule's other orders (bench/labs/order_lab.cpp
//                measures what each does to accuracy; this lab what each costs a phase)
//
// On the CPU (every build with CUDA, `meson test sum-lab`) the same functions run on the host: 2-5
// must give version 1's bits (the order is the reference's); 1-5 the bits of the same passes written
// plainly with every sum in engine/model/sum_order.hpp's order at 1 lane, and 9-11 at their lane
// count (so what is timed is the rule's order); and every version must follow a float64 run of the same passes within
// 1e-5 of the state's scale (a skipped or doubled term is off by ~1e-2). On a GPU each version runs at 1, 2, 4 and 8
// rows a block (128 rows: the rev88 batch) for kPasses passes, alternating halves as the forward does; its state must
// equal the host run's bits, and the table gives cycles a pass (median over blocks and passes after the first) and the
// first pass (of launches that follow one of the same code, which is then in L2 at least: not a cold fetch, which the
// kernel lab's phase-stamps probe times). Not a test of speed: bench/NOTES.md records runs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/labs/global_timer.cuh"
#include "engine/cuda/device.hpp"
#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/fused.hpp"
#include "engine/model/sum_order.hpp"
#include "engine/stats.hpp"

namespace {

using namespace revgraph;
using model::kHalf;
namespace fused = cuda::fused;
using bench::global_ns;

constexpr int kBatch = 128;               // rows: the rev88 batch
constexpr int kPasses = 16;               // couple phases a launch, halves alternating
constexpr int kGroups = (kHalf + 3) / 4;  // 11 four-term groups, the last with one term
constexpr int kPad = 4 * kGroups;         // 44: a half or a weight row on 16 bytes
constexpr int kPadLd = 2 * kPad;          // 88: a padded state row
constexpr int kEngineLd = 83;             // version 1's state row: the engine's before fused_layout.hpp
constexpr float kAlpha = 0.1f;
constexpr int kVersions = 11;
constexpr int kRowsPerBlock[] = {1, 2, 4, 8};

struct Version {
    const char* name;
    int split;     // lanes a sum
    int row_sums;  // rows a thread sums at once (one load of a weight serves them all)
    bool vec4, relu_once;
    int acc_lanes;    // lanes of the sum rule in one thread (versions 9-11), 0 for none
    int max_threads;  // its kernel's launch bound
    // Every sum in index order: the reference's bits.
    constexpr bool index_order() const { return split == 1 && acc_lanes == 0; }
    // Its layout: a half (and a weight row) of 41 floats, or 44 on 16 bytes; a state row of two
    // halves (83 as the engine keeps it: odd, against bank conflicts).
    RG_HD constexpr int half() const { return vec4 ? kPad : kHalf; }
    RG_HD constexpr int ld() const { return vec4 ? kPadLd : kEngineLd; }
};
constexpr Version kVersion[kVersions] = {
    {"engine", 1, 1, false, false, 0, 384},  {"vec4", 1, 1, true, false, 0, 384},
    {"vec4 relu", 1, 1, true, true, 0, 384}, {"rows x2", 1, 2, true, true, 0, 384},
    {"rows x4", 1, 4, true, true, 0, 384},   {"split 2", 2, 1, true, true, 0, 768},
    {"split 4", 4, 1, true, true, 0, 1024},  {"split 8", 8, 1, true, true, 0, 1024},
    {"acc 4", 1, 1, true, true, 4, 384},     {"acc 2", 1, 1, true, true, 2, 384},
    {"acc 8", 1, 1, true, true, 8, 384},
};

// Calls f(std::integral_constant<int, V>{}) for V = v: the one place a version number picks its
// templates, for the host replica and the kernel alike.
template <int V = 0, class F>
auto with_version(int v, F&& f) {
    if constexpr (V + 1 < kVersions)
        if (v != V) return with_version<V + 1>(v, f);
    return f(std::integral_constant<int, V>{});
}

// ---- the sums: host and device share them --------------------------------------------------------

RG_HD float lane(const float4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }

// Terms [4·first_group, min(4·(first_group + G), 41)) of Σ_i t(x[i]) w[i], in index order, from 0;
// t is relu, or nothing where x already holds relu(x). The groups load as 16-byte vectors first
// (engine/cuda/ordered_sum.hpp's reason), then the adds run on registers. One code path for host
// and device (no __CUDA_ARCH__ branch), so the host replica is this very code: x and w sit on 16
// bytes on both sides (rows of 88 and 44 floats, halves at 0 and 44, 16-byte-aligned buffers).
template <int G, bool kReluOnce>
RG_HD float part_sum(const float* x, const float* w, int first_group) {
    float4 xv[G], wv[G];
    RG_DEVICE_UNROLL
    for (int k = 0; k < G; ++k)
        if (first_group + k < kGroups) {
            xv[k] = reinterpret_cast<const float4*>(x)[first_group + k];
            wv[k] = reinterpret_cast<const float4*>(w)[first_group + k];
        }
    float acc = 0.0f;
    RG_DEVICE_UNROLL
    for (int k = 0; k < G; ++k) RG_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j)
        if (first_group + k < kGroups && 4 * (first_group + k) + j < kHalf) {
            const float xi = lane(xv[k], j);
            acc += (kReluOnce ? xi : model::relu(xi)) * lane(wv[k], j);
        }
    return acc;
}

// Σ_i x_k[i] w[i] for rows k < n of K (x_k = x + k·kPadLd, already relu'd), each in index order:
// K independent chains, one 16-byte load of w for all of them. Rows k ≥ n read row 0 (in bounds;
// their sums are not used).
template <int K>
RG_HD void rows_sums(const float* x, int n, const float* w, float (&acc)[K]) {
    RG_DEVICE_UNROLL
    for (int k = 0; k < K; ++k) acc[k] = 0.0f;
    RG_DEVICE_UNROLL
    for (int g = 0; g < kGroups; ++g) {
        const float4 wv = reinterpret_cast<const float4*>(w)[g];
        float4 xv[K];
        RG_DEVICE_UNROLL
        for (int k = 0; k < K; ++k) xv[k] = reinterpret_cast<const float4*>(x + (k < n ? k : 0) * kPadLd)[g];
        RG_DEVICE_UNROLL
        for (int j = 0; j < 4; ++j)
            if (4 * g + j < kHalf) RG_DEVICE_UNROLL
        for (int k = 0; k < K; ++k) acc[k] += lane(xv[k], j) * lane(wv, j);
    }
}

// Versions 9-11's order, engine/model/sum_order.hpp's for L lanes: term i into accumulator i mod L,
// then the rule's own pairwise join (L = 4: (a0 + a1) + (a2 + a3)).
template <int L>
RG_HD float lane_accumulators(const float* x, const float* w) {
    float acc[L];
    RG_DEVICE_UNROLL
    for (int l = 0; l < L; ++l) acc[l] = 0.0f;
    RG_DEVICE_UNROLL
    for (int g = 0; g < kGroups; ++g) {
        const float4 xv = reinterpret_cast<const float4*>(x)[g];
        const float4 wv = reinterpret_cast<const float4*>(w)[g];
        RG_DEVICE_UNROLL
        for (int j = 0; j < 4; ++j)
            if (4 * g + j < kHalf) acc[(4 * g + j) % L] += lane(xv, j) * lane(wv, j);
    }
    model::join_lanes<L>(acc);
    return acc[0];
}

template <int P>
constexpr int kGroupsPerPart = (kGroups + P - 1) / P;

// The butterfly's tree on the host: after the round with mask m, lane l holds v[l] + v[l ^ m]
// (what __shfl_xor_sync gives lane l); lane 0's value is the sum. Adds commute bit for bit, so
// every lane of the group ends with the same value.
template <int P>
float tree(float (&v)[P]) {
    for (int m = 1; m < P; m <<= 1) {
        float next[P];
        for (int l = 0; l < P; ++l) next[l] = v[l] + v[l ^ m];
        std::memcpy(v, next, sizeof v);
    }
    return v[0];
}

// One padded couple on the host: out += α·Σ over the in half, for each of `rows` rows.
// kAccLanes: versions 9-11 (P = 1, relu kept), lane_accumulators instead of part_sum.
template <int P, bool kReluOnce, int kAccLanes = 0>
void host_couple(float* x, float* rx, const float* w, int rows, int in, int out) {
    for (int r = 0; r < rows; ++r) {
        float* s = x + r * kPadLd;
        float* rs = rx + r * kPadLd;
        const float* src = (kReluOnce ? rs : s) + in;
        for (int o = 0; o < kHalf; ++o) {
            float parts[P];
            for (int p = 0; p < P; ++p)
                parts[p] = kAccLanes > 0
                               ? lane_accumulators<(kAccLanes > 0 ? kAccLanes : 1)>(src, w + o * kPad)
                               : part_sum<kGroupsPerPart<P>, kReluOnce>(src, w + o * kPad, p * kGroupsPerPart<P>);
            const float branch = tree<P>(parts);
            s[out + o] = s[out + o] + kAlpha * branch;
            rs[out + o] = model::relu(s[out + o]);
        }
    }
}

// The same with K rows a thread (versions 4-5).
template <int K>
void host_couple_rows(float* x, float* rx, const float* w, int rows, int in, int out) {
    for (int r0 = 0; r0 < rows; r0 += K) {
        const int n = std::min(K, rows - r0);
        for (int o = 0; o < kHalf; ++o) {
            float acc[K];
            rows_sums<K>(rx + r0 * kPadLd + in, n, w + o * kPad, acc);
            for (int k = 0; k < n; ++k) {
                float* s = x + (r0 + k) * kPadLd;
                s[out + o] = s[out + o] + kAlpha * acc[k];
                rx[(r0 + k) * kPadLd + out + o] = model::relu(s[out + o]);
            }
        }
    }
}

// ---- the device side -----------------------------------------------------------------------------

struct Stamps {
    long long* clock;                  // [block][kPasses + 1]
    unsigned long long *enter, *exit;  // [block], global timer
};

// The engine's executor in miniature: a phase's items over the block's threads, then a barrier.
struct LabExec {
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) item(i);
        __syncthreads();
    }
};

// One padded couple on the device: item = row·41 + o, P lanes an item, lane p the p-th part.
// Rounds are uniform over the block, so every lane of a warp reaches the shuffles.
template <int P, bool kReluOnce, int kAccLanes = 0>
__device__ __forceinline__ void device_couple(float* x, float* rx, const float* w, int rows, int in, int out) {
    const int items = rows * kHalf, lanes = items * P;
    for (int base = 0; base < lanes; base += static_cast<int>(blockDim.x)) {
        const int t = base + static_cast<int>(threadIdx.x), item = t / P, part = t - item * P;
        const bool active = item < items;
        const int r = active ? item / kHalf : 0, o = active ? item - r * kHalf : 0;
        float* s = x + r * kPadLd;
        float* rs = rx + r * kPadLd;
        const float* src = (kReluOnce ? rs : s) + in;
        float v = !active         ? 0.0f
                  : kAccLanes > 0 ? lane_accumulators<(kAccLanes > 0 ? kAccLanes : 1)>(src, w + o * kPad)
                                  : part_sum<kGroupsPerPart<P>, kReluOnce>(src, w + o * kPad, part * kGroupsPerPart<P>);
        RG_DEVICE_UNROLL
        for (int m = 1; m < P; m <<= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
        if (active && part == 0) {
            const float y = s[out + o] + kAlpha * v;
            s[out + o] = y;
            if (kReluOnce) rs[out + o] = model::relu(y);
        }
    }
    __syncthreads();
}

// K rows a thread: item = (row group, o).
template <int K>
__device__ __forceinline__ void device_couple_rows(float* x, float* rx, const float* w, int rows, int in, int out) {
    const int items = (rows + K - 1) / K * kHalf;
    for (int item = static_cast<int>(threadIdx.x); item < items; item += static_cast<int>(blockDim.x)) {
        const int rg = item / kHalf, o = item - rg * kHalf, r0 = rg * K, n = min(K, rows - r0);
        float acc[K];
        rows_sums<K>(rx + r0 * kPadLd + in, n, w + o * kPad, acc);
        RG_DEVICE_UNROLL
        for (int k = 0; k < K; ++k)
            if (k < n) {
                float* s = x + (r0 + k) * kPadLd;
                const float y = s[out + o] + kAlpha * acc[k];
                s[out + o] = y;
                rx[(r0 + k) * kPadLd + out + o] = model::relu(y);
            }
    }
    __syncthreads();
}

// Pass k: even k adds into the left half from the right (W0), odd k the reverse (W1), as the
// forward's F and G couples do.
template <int V>
__global__ void __launch_bounds__(kVersion[V].max_threads, 1)
    sum_lab_kernel(float* state, const float* weights, int rows_per_block, Stamps st) {
    constexpr Version ver = kVersion[V];
    extern __shared__ __align__(16) float smem[];
    constexpr int ld = ver.ld(), half = ver.half();
    constexpr int wfloats = 2 * kHalf * half;
    float* w = smem;
    float* x = w + wfloats;
    float* rx = x + rows_per_block * ld;  // relu copies (versions 3-11)
    float* g = state + static_cast<std::size_t>(blockIdx.x) * rows_per_block * ld;
    for (int i = static_cast<int>(threadIdx.x); i < wfloats; i += static_cast<int>(blockDim.x)) w[i] = weights[i];
    for (int i = static_cast<int>(threadIdx.x); i < rows_per_block * ld; i += static_cast<int>(blockDim.x)) {
        x[i] = g[i];
        rx[i] = model::relu(g[i]);
    }
    __syncthreads();
    // The clocks start after the staging: the first pass is its code's fetch, not the copies.
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    long long* clocks = st.clock + static_cast<std::size_t>(blockIdx.x) * (kPasses + 1);
#pragma unroll 1
    for (int k = 0; k < kPasses; ++k) {
        const int in = (k % 2 == 0) ? half : 0, out = half - in;
        const float* wk = w + (k % 2) * kHalf * half;
        if constexpr (V == 0) {
            LabExec ex;
            fused::couple<fused::FlatParams>(ex, wk, x, kEngineLd, rows_per_block, in, out, 1.0f, kAlpha);
        } else if constexpr (ver.row_sums > 1) {
            device_couple_rows<ver.row_sums>(x, rx, wk, rows_per_block, in, out);
        } else {
            device_couple<ver.split, ver.relu_once, ver.acc_lanes>(x, rx, wk, rows_per_block, in, out);
        }
        if (threadIdx.x == 0) clocks[k + 1] = clock64();
    }
    const unsigned long long t1 = global_ns();
    for (int i = static_cast<int>(threadIdx.x); i < rows_per_block * ld; i += static_cast<int>(blockDim.x)) g[i] = x[i];
    if (threadIdx.x == 0) {
        clocks[0] = c0;
        st.enter[blockIdx.x] = t0;
        st.exit[blockIdx.x] = t1;
    }
}

// ---- the host side -------------------------------------------------------------------------------

// The lab's state and weights, in the engine's layout and the padded one.
struct Data {
    std::vector<float> state;  // kBatch x 82
    std::vector<float> w;      // 2 x 41 x 41: W0 (left from right), W1 (right from left)
};

Data make_data() {
    std::mt19937 gen(2026);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), uw(-0.3f, 0.3f);
    Data d;
    d.state.resize(static_cast<std::size_t>(kBatch) * model::kFeatures);
    d.w.resize(2 * model::kBranchSize);
    for (float& v : d.state) v = u(gen);
    for (float& v : d.w) v = uw(gen);
    return d;
}

// State rows of `ld` floats with the right half at column `half`; weights rows of `wld` floats.
std::vector<float> lay_state(const Data& d, int ld, int half) {
    std::vector<float> s(static_cast<std::size_t>(kBatch) * ld, 0.0f);
    for (int r = 0; r < kBatch; ++r)
        for (int c = 0; c < kHalf; ++c) {
            s[static_cast<std::size_t>(r) * ld + c] = d.state[static_cast<std::size_t>(r) * model::kFeatures + c];
            s[static_cast<std::size_t>(r) * ld + half + c] =
                d.state[static_cast<std::size_t>(r) * model::kFeatures + kHalf + c];
        }
    return s;
}
std::vector<float> lay_weights(const Data& d, int wld) {
    std::vector<float> w(static_cast<std::size_t>(2) * kHalf * wld, 0.0f);
    for (int m = 0; m < 2 * kHalf; ++m)
        for (int i = 0; i < kHalf; ++i) w[static_cast<std::size_t>(m) * wld + i] = d.w[m * kHalf + i];
    return w;
}
// Back to 82 columns.
std::vector<float> unlay(const std::vector<float>& s, int ld, int half) {
    std::vector<float> out(static_cast<std::size_t>(kBatch) * model::kFeatures);
    for (int r = 0; r < kBatch; ++r)
        for (int c = 0; c < kHalf; ++c) {
            out[static_cast<std::size_t>(r) * model::kFeatures + c] = s[static_cast<std::size_t>(r) * ld + c];
            out[static_cast<std::size_t>(r) * model::kFeatures + kHalf + c] =
                s[static_cast<std::size_t>(r) * ld + half + c];
        }
    return out;
}

// fused::SequentialExec's loop, callable from the host instantiation of the RG_HD phase code in
// this .cu (SequentialExec is host-only: the emulator's is built by the host compiler alone).
struct HostExec {
    template <class F>
    RG_HD void phase(int count, F&& item) {
        for (int i = 0; i < count; ++i) item(i);
    }
};

// kPasses passes of version V on the host, from d, picked from kVersion[V] as the kernel picks
// its pass; the state in 82 columns.
template <int V>
std::vector<float> host_version(const Data& d) {
    constexpr Version ver = kVersion[V];
    constexpr int ld = ver.ld(), half = ver.half();
    std::vector<float> x = lay_state(d, ld, half), rx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) rx[i] = model::relu(x[i]);
    const std::vector<float> w = lay_weights(d, half);
    for (int k = 0; k < kPasses; ++k) {
        const int in = (k % 2 == 0) ? half : 0, out = half - in;
        const float* wk = w.data() + (k % 2) * kHalf * half;
        if constexpr (V == 0) {
            HostExec ex;
            fused::couple<fused::FlatParams>(ex, wk, x.data(), kEngineLd, kBatch, in, out, 1.0f, kAlpha);
        } else if constexpr (ver.row_sums > 1) {
            host_couple_rows<ver.row_sums>(x.data(), rx.data(), wk, kBatch, in, out);
        } else {
            host_couple<ver.split, ver.relu_once, ver.acc_lanes>(x.data(), rx.data(), wk, kBatch, in, out);
        }
    }
    return unlay(x, ld, half);
}

std::vector<float> host_run(int v, const Data& d) {
    return with_version(v, [&](auto ver) { return host_version<decltype(ver)::value>(d); });
}

// A term of the couple's sum: relu(x_i) W[o][i]. A type with a host-and-device call, not a lambda:
// lane_sum is host-and-device code, and nvcc warns where such code calls a host-only lambda.
template <typename T>
struct CoupleTerm {
    const T* x;
    const float* w_row;
    RG_HD T operator()(int i) const { return model::relu(x[i]) * static_cast<T>(w_row[i]); }
};

// The same passes written plainly on the engine's unpadded layout, in T, with every sum in the order
// of engine/model/sum_order.hpp for `lanes` lanes: in float32, what versions 9-11 (and, at 1 lane,
// the index-order versions) must give bit for bit; in float64, what every version must follow.
template <typename T>
std::vector<T> plain_run(const Data& d, int lanes) {
    std::vector<T> s(d.state.begin(), d.state.end());
    for (int k = 0; k < kPasses; ++k) {
        const int in = (k % 2 == 0) ? kHalf : 0, out = kHalf - in;
        const float* wk = d.w.data() + (k % 2) * model::kBranchSize;
        for (int r = 0; r < kBatch; ++r) {
            T* row = s.data() + static_cast<std::size_t>(r) * model::kFeatures;
            for (int o = 0; o < kHalf; ++o) {
                const T branch = model::lane_sum_any<T>(kHalf, lanes, CoupleTerm<T>{row + in, wk + o * kHalf});
                row[out + o] = row[out + o] + static_cast<T>(kAlpha) * branch;
            }
        }
    }
    return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The CPU half: versions 2-5 give version 1's bits; 1-5 and 9-11 the rule's at their lane count;
// every version follows float64.
bool cpu_checks(const Data& d, std::vector<std::vector<float>>& host) {
    const std::vector<double> f64 = plain_run<double>(d, 1);
    double scale = 0;
    for (double v : f64) scale = std::max(scale, std::fabs(v));
    bool ok = true;
    std::printf("cpu: %d couple passes on %d rows, each version against float64 (scale %.3g) and version 1\n", kPasses,
                kBatch, scale);
    std::printf("  %-2s %-10s %-5s %-4s %14s  %s\n", "v", "name", "split", "rows", "max err/scale",
                "bits vs 1; vs the sum rule");
    for (int v = 0; v < kVersions; ++v) {
        host.push_back(host_run(v, d));
        double err = 0;
        for (std::size_t i = 0; i < f64.size(); ++i)
            err = std::max(err, std::fabs(static_cast<double>(host[v][i]) - f64[i]));
        const bool equal = same_bits(host[v], host[0]);
        const bool follows = err <= 1e-5 * scale;
        const bool must_equal = kVersion[v].index_order();
        // Index order is the rule's 1 lane; versions 9-11 its L lanes. Split sums (6-8) follow no lane count.
        const int rule_lanes = must_equal ? 1 : kVersion[v].acc_lanes;
        const bool rule_equal = rule_lanes > 0 && same_bits(host[v], plain_run<float>(d, rule_lanes));
        ok = ok && follows && (equal || !must_equal) && (rule_lanes == 0 || rule_equal);
        std::printf("  %-2d %-10s %-5d %-4d %14.3g  %s%s; %s%s\n", v + 1, kVersion[v].name, kVersion[v].split,
                    kVersion[v].row_sums, err / scale, equal ? "equal" : "differ",
                    must_equal && !equal ? " (MUST BE EQUAL)" : "",
                    rule_lanes == 0 ? "no lane count"
                    : rule_equal    ? ("equal at " + std::to_string(rule_lanes) + " lane(s)").c_str()
                                    : "DIFFER (MUST BE EQUAL)",
                    follows ? "" : " (FARTHER FROM FLOAT64 THAN 1e-5)");
    }
    return ok;
}

// ---- the GPU half --------------------------------------------------------------------------------

constexpr int kTimedLaunches = 5;  // after the launch whose state is checked

struct Timing {
    bool equal = false;
    int threads = 0;
    double pass_cycles = 0, first_cycles = 0, ns_per_cycle = 0;
};

int threads_for(int v, int rows_per_block) {
    const int sums = (rows_per_block + kVersion[v].row_sums - 1) / kVersion[v].row_sums;
    const int lanes = sums * kHalf * kVersion[v].split;
    return std::min(kVersion[v].max_threads, (lanes + 31) / 32 * 32);
}

template <int V>
Timing gpu_version(const Data& d, const std::vector<float>& want, int rows_per_block) {
    const int ld = kVersion[V].ld(), half = kVersion[V].half(), blocks = kBatch / rows_per_block;
    const std::vector<float> x = lay_state(d, ld, half), w = lay_weights(d, half);
    cuda::DeviceBuffer state(x.size() * sizeof(float)), weights(w.size() * sizeof(float));
    cuda::DeviceBuffer clock(static_cast<std::size_t>(blocks) * (kPasses + 1) * sizeof(long long));
    cuda::DeviceBuffer enter(blocks * sizeof(unsigned long long)), exit(blocks * sizeof(unsigned long long));
    weights.upload(w.data(), weights.bytes());
    const Stamps st{clock.as<long long>(), enter.as<unsigned long long>(), exit.as<unsigned long long>()};
    const std::size_t smem = (w.size() + 2 * static_cast<std::size_t>(rows_per_block) * ld) * sizeof(float);
    cudaCheck(
        cudaFuncSetAttribute(sum_lab_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    Timing t;
    t.threads = threads_for(V, rows_per_block);
    std::vector<double> pass, first, ns, cycles;
    for (int launch = 0; launch <= kTimedLaunches; ++launch) {
        state.upload(x.data(), state.bytes());
        sum_lab_kernel<V><<<blocks, t.threads, smem>>>(state.as<float>(), weights.as<float>(), rows_per_block, st);
        cudaCheck(cudaGetLastError());
        cudaCheck(cudaDeviceSynchronize());
        if (launch == 0) {
            std::vector<float> got(x.size());
            state.download(got.data(), state.bytes());
            t.equal = same_bits(unlay(got, ld, half), want);
            continue;
        }
        std::vector<long long> c(static_cast<std::size_t>(blocks) * (kPasses + 1));
        std::vector<unsigned long long> e(blocks), z(blocks);
        clock.download(c.data(), clock.bytes());
        enter.download(e.data(), enter.bytes());
        exit.download(z.data(), exit.bytes());
        for (int b = 0; b < blocks; ++b) {
            const long long* cb = c.data() + static_cast<std::size_t>(b) * (kPasses + 1);
            first.push_back(static_cast<double>(cb[1] - cb[0]));
            for (int k = 2; k <= kPasses; ++k) pass.push_back(static_cast<double>(cb[k] - cb[k - 1]));
            ns.push_back(static_cast<double>(z[b] - e[b]));
            cycles.push_back(static_cast<double>(cb[kPasses] - cb[0]));
        }
    }
    t.pass_cycles = median(pass);
    t.first_cycles = median(first);
    double sum_ns = 0, sum_cycles = 0;
    for (std::size_t i = 0; i < ns.size(); ++i) sum_ns += ns[i], sum_cycles += cycles[i];
    t.ns_per_cycle = sum_cycles > 0 ? sum_ns / sum_cycles : 0;
    return t;
}

Timing gpu_run(int v, const Data& d, const std::vector<float>& want, int rows_per_block) {
    return with_version(v, [&](auto ver) { return gpu_version<decltype(ver)::value>(d, want, rows_per_block); });
}

bool gpu_lab(const Data& d, const std::vector<std::vector<float>>& host) {
    std::printf("gpu: %s; %d rows in blocks of R, %d passes a launch, medians over blocks and %d launches\n",
                cuda::describe_device().c_str(), kBatch, kPasses, kTimedLaunches);
    std::printf("  %-2s %-10s %-5s %-4s %-3s %-7s %-6s %10s %8s %11s\n", "v", "name", "split", "rows", "R", "threads",
                "bits", "cyc/pass", "ns/pass", "first pass");
    bool ok = true;
    // The fastest of each order at 2 rows a block, the engine's rows kernel's shape (fewer rows a
    // block are cheaper a phase but not a step: more blocks stage the parameters).
    double best_index = 0, best_tree = 0;
    int best_index_v = 0, best_tree_v = 0;
    for (int v = 0; v < kVersions; ++v)
        for (int r : kRowsPerBlock) {
            const Timing t = gpu_run(v, d, host[static_cast<std::size_t>(v)], r);
            ok = ok && t.equal;
            std::printf("  %-2d %-10s %-5d %-4d %-3d %-7d %-6s %10.0f %8.0f %11.0f\n", v + 1, kVersion[v].name,
                        kVersion[v].split, kVersion[v].row_sums, r, t.threads, t.equal ? "equal" : "DIFFER",
                        t.pass_cycles, t.pass_cycles * t.ns_per_cycle, t.first_cycles);
            if (r != 2 || !t.equal) continue;  // a version whose bits differ is no candidate
            double& best = kVersion[v].index_order() ? best_index : best_tree;
            int& best_v = kVersion[v].index_order() ? best_index_v : best_tree_v;
            if (best == 0 || t.pass_cycles < best) best = t.pass_cycles, best_v = v;
        }
    // Among the versions whose bits hold; "none" where no version of that order kept them.
    const auto fastest = [](int v, double cycles) {
        return cycles > 0 ? "v" + std::to_string(v + 1) + ", " + std::to_string(static_cast<long>(cycles + 0.5)) +
                                " cycles a pass"
                          : std::string("none holds its bits");
    };
    std::printf("  at R 2: fastest in index order (the reference's bits) %s; in a fixed tree %s\n",
                fastest(best_index_v, best_index).c_str(), fastest(best_tree_v, best_tree).c_str());
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    // A line at a time into a log file too: a run stopped at its time limit keeps every table line
    // printed before the stop (fully buffered, up to the last 4 KB would be lost).
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::printf("usage: revgraph_sum_lab (no options: the CPU checks, then the GPU table where a GPU is)\n");
        return 0;
    }
    if (argc > 1) {
        std::fprintf(stderr, "revgraph_sum_lab: error: no options are taken (got '%s')\n", argv[1]);
        return 2;
    }
    try {
        const Data d = make_data();
        std::vector<std::vector<float>> host;
        bool ok = cpu_checks(d, host);
        if (cuda::device_count() > 0)
            ok = gpu_lab(d, host) && ok;
        else
            std::printf("gpu: not run (%s)\n", cuda::describe_device().c_str());
        std::printf("revgraph_sum_lab: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "revgraph_sum_lab: error: %s\n", e.what());
        return 1;
    }
}
