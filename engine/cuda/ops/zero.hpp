#pragma once
// `count` elements of a buffer set to zero bits (0.0f, 0): the reset's momentum and gradients.
#include <cstring>

#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct ZeroOp {
    Ref dst;
    std::size_t count = 0;
};

namespace ops {

inline std::vector<Access> accesses(const ZeroOp& z, std::size_t) { return {{z.dst, z.count, buf_elem(z.dst.buf)}}; }

struct ZeroArgs {
    void* dst;
    std::size_t bytes;
};
template <class Memory>
ZeroArgs resolve(const ZeroOp& z, const Memory& m) {
    return {m.address(z.dst), z.count * elem_bytes(buf_elem(z.dst.buf))};
}

inline Info info(const ZeroOp&) { return {"zero", Kind::copy}; }

inline void run_host(const ZeroArgs& a) {
    if (a.bytes > 0) std::memset(a.dst, 0, a.bytes);
}

void launch(const ZeroArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
void launch(const ZeroArgs& a, Stream stream) { cudaCheck(cudaMemsetAsync(a.dst, 0, a.bytes, stream)); }
#endif

}  // namespace ops
}  // namespace revgraph::cuda
