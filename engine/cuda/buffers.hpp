#pragma once
// The device buffers of the launch plan (engine/cuda/task_plan.hpp) as plain data: their names, element
// types, a reference to an element of one, and an operation's access to a range of one. No CUDA headers.
#include <cstddef>
#include <cstdint>

namespace revgraph::cuda {

enum class Buf : int {
    // parameters, gradients, momentum: one buffer each in model::Layout order; initial = the seed's
    params,
    grads,
    velocity,
    initial,
    // inputs resident on the device: raw pixels, lifted rows, labels, every epoch's permutation
    train_raw,
    query_raw,
    train_rows,
    query_rows,
    train_labels,
    permutations,
    // the epoch order the step kernels read (the epoch's permutation is copied here first)
    order,
    // one SGD step: the single retained core state and the per-step scratch
    state,
    dstate,
    act_left,
    act_right,
    branch,
    dtmp,
    scores,
    dscores,
    batch_labels,
    // the backward's per-branch operands of the weight gradients, one full-batch slot per branch:
    // relu of the branch's input and the gradient of its output, rows x 41 each
    act_stack,
    grad_stack,
    // prediction: Q-row core state and scratch, scores, predictions
    query_state,
    query_act_left,
    query_act_right,
    query_branch,
    query_scores,
    predictions,
    count
};
inline constexpr int kBufCount = static_cast<int>(Buf::count);

enum class Elem { f32, i32, i64 };
const char* buf_name(Buf b);
Elem buf_elem(Buf b);
// The buffers prepare() fills from the task (the seed's parameters, raw pixels, labels, every
// epoch's permutation: staged_inputs.hpp) and no program writes; every other one starts as zeros.
bool buf_is_input(Buf b);
std::size_t elem_bytes(Elem e);

// An element offset into one buffer.
struct Ref {
    Buf buf = Buf::count;
    std::size_t offset = 0;
};

// A buffer range an operation reads or writes, for bounds and type checks.
struct Access {
    Ref ref;
    std::size_t extent = 0;  // elements from ref.offset
    Elem elem = Elem::f32;
};

}  // namespace revgraph::cuda
