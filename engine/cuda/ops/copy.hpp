#pragma once
// A device-to-device copy of `count` elements within or between buffers of one element type: the
// reset's parameters from the seed's copy, and each epoch's resident permutation into the order.
#include <cstring>

#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct CopyOp {
    Ref dst, src;
    std::size_t count = 0;
};

namespace ops {

inline std::vector<Access> accesses(const CopyOp& c, std::size_t) {
    return {{c.dst, c.count, buf_elem(c.dst.buf)}, {c.src, c.count, buf_elem(c.dst.buf)}};
}

inline Info info(const CopyOp&) { return {"copy", Kind::copy}; }

struct CopyArgs {
    void* dst;
    const void* src;
    std::size_t bytes;
};
template <class Memory>
CopyArgs resolve(const CopyOp& c, const Memory& m) {
    return {m.address(c.dst), m.address(c.src), c.count * elem_bytes(buf_elem(c.dst.buf))};
}

inline void run_host(const CopyArgs& a) {
    if (a.bytes > 0) std::memcpy(a.dst, a.src, a.bytes);
}

void launch(const CopyArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
void launch(const CopyArgs& a, Stream stream) {
    cudaCheck(cudaMemcpyAsync(a.dst, a.src, a.bytes, cudaMemcpyDeviceToDevice, stream));
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
