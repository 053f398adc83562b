#pragma once
// What every operation file in engine/cuda/ops/ shares. Each file is one operation's whole home:
//   struct XxxOp                         the plan's data (which buffers, how many rows, constants)
//   ops::accesses(op, source_rows)       every buffer range it reads or writes (the plan's checker)
//   ops::info(op)                        its name and kind, for messages and launch counts
//   ops::resolve(op, memory) -> args     its buffers as pointers: device memory or the emulator's vectors
//   the per-element body                 (RG_HD) shared by the CUDA kernel and the CPU emulator
//   ops::run_host(args)                  the emulator: the body over every element, in order
//   ops::launch(args, stream)            the GPU: declared here, defined (with its kernel) where
//                                        REVGRAPH_DEFINE_KERNELS is set, i.e. only in kernels.cu
// The executor and the emulator dispatch with std::visit over the Op variant, so an operation that
// lacks one of these fails to compile. docs/adding-an-op.md lists the steps.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/cuda/buffers.hpp"
#include "engine/model/math.hpp"

#if defined(REVGRAPH_DEFINE_KERNELS)
#include "engine/cuda/kernels/common.cuh"
#endif

struct CUstream_st;

namespace revgraph::cuda::ops {

// cudaStream_t without the CUDA headers (it is this very pointer type), so host code of any build
// may declare launchers.
using Stream = CUstream_st*;

// How an operation counts in a program's launches: a cuBLASLt product, a kernel of ours, or a copy
// or zero-fill.
enum class Kind { product, kernel, copy };
struct Info {
    const char* name;
    Kind kind;
};

// Element counts of the plan's arrays (engine/cuda/program.hpp's conventions), for accesses(), at a
// half width h (rev88: 41; the width is 2h):
//   half_elements(rows, h)   a rows x h array of its own: relu, branch and gradient scratch, one slot
//                            of the activation or gradient stack
//   state_elements(rows, h)  a rows x 2h core state or lifted row array
//   half_extent(rows, h)     one half of a rows x 2h state seen from its first element: rows - 1 full
//                            strides of 2h, then the last row's h
inline std::size_t half_elements(std::int64_t rows, int h = model::kHalf) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(h);
}
inline std::size_t state_elements(std::int64_t rows, int h = model::kHalf) {
    return static_cast<std::size_t>(rows) * 2 * static_cast<std::size_t>(h);
}
inline std::size_t half_extent(int rows, int h = model::kHalf) {
    return rows <= 0 ? 0 : static_cast<std::size_t>(rows - 1) * 2 * static_cast<std::size_t>(h) + h;
}

// The backward's accesses to a half's gradient: dhalf (rows x 2h layout) where it is read at all,
// dtmp (rows x h) where it is masked in, grad_copy (rows x h) where the result is copied out.
inline void add_gradient_accesses(std::vector<Access>& a, int rows, Ref dhalf, bool masked, Ref dtmp, bool copied,
                                  Ref grad_copy, int h = model::kHalf) {
    if (masked || copied) a.push_back({dhalf, half_extent(rows, h), Elem::f32});
    if (masked) a.push_back({dtmp, half_elements(rows, h), Elem::f32});
    if (copied) a.push_back({grad_copy, half_elements(rows, h), Elem::f32});
}

}  // namespace revgraph::cuda::ops
