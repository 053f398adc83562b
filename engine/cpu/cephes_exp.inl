// e^r for |r| <= ln2/2 by Cephes expf's polynomial (model::cephes_expf's constants), over a SIMD
// traits type S (set1, fmadd, mul, add), fused multiply-adds in a fixed order: the fast kernels'
// exponential after the range reduction. Included by fast_avx2.cpp, fast_avx512.cpp (inside their
// target regions, so it is compiled for their instruction sets) and fast_portable.cpp.
// Requires engine/model/math.hpp.
template <class S>
typename S::V cephes_exp_reduced(typename S::V r) {
    using namespace model::cephes_expf;
    typename S::V y = S::set1(kP5);
    y = S::fmadd(y, r, S::set1(kP4));
    y = S::fmadd(y, r, S::set1(kP3));
    y = S::fmadd(y, r, S::set1(kP2));
    y = S::fmadd(y, r, S::set1(kP1));
    y = S::fmadd(y, r, S::set1(kP0));
    y = S::fmadd(y, S::mul(r, r), r);
    return S::add(y, S::set1(1.0f));
}
