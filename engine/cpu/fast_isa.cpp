// Which of the fast backend's kernel sets this processor can run.
#include "engine/cpu/fast_kernels.hpp"

#include <cmath>

#include "engine/error.hpp"

namespace revgraph::cpu::fast {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::portable: return "portable";
        case Isa::portable_fma: return "portable+fma";
        case Isa::avx2: return "avx2+fma";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

bool isa_supported(Isa isa) {
    switch (isa) {
        case Isa::portable: return true;
        case Isa::portable_fma: return ops_portable_fma() != nullptr;  // std::fma is exact even in software
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
        case Isa::avx2: return ops_avx2() != nullptr && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::avx512:
            return ops_avx512() != nullptr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
                   __builtin_cpu_supports("fma");
#else
        default: return false;
#endif
    }
    return false;
}

namespace {
// Whether this build's std::fma is an instruction (FP_FAST_FMAF: ARMv8, or x86 built with FMA)
// rather than a call into the C library, many times slower, which makes portable+fma a bit-for-bit
// check there, not a kernel set to pick.
constexpr bool fast_fma() {
#if defined(FP_FAST_FMAF)
    return true;
#else
    return false;
#endif
}
}  // namespace

std::vector<Isa> supported_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable_fma, Isa::portable})
        if (isa_supported(isa)) out.push_back(isa);
    return out;
}

Isa best_isa() {
    for (Isa isa : supported_isas())
        if (isa != Isa::portable_fma || fast_fma()) return isa;
    return Isa::portable;
}

const Ops& ops(Isa isa) {
    if (!isa_supported(isa))
        throw Error(std::string("cpu: the ") + isa_name(isa) + " kernels cannot run on this processor");
    switch (isa) {
        case Isa::avx512: return *ops_avx512();
        case Isa::avx2: return *ops_avx2();
        case Isa::portable_fma: return *ops_portable_fma();
        default: return *ops_portable();
    }
}

}  // namespace revgraph::cpu::fast
