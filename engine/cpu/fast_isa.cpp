// Which of the fast backend's kernel sets this processor can run.
#include "engine/cpu/fast_kernels.hpp"

#include "engine/error.hpp"

namespace revgraph::cpu::fast {

const char* isa_name(Isa isa) {
    switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2+fma";
    case Isa::avx512: return "avx512";
    }
    return "?";
}

bool isa_supported(Isa isa) {
    switch (isa) {
    case Isa::portable: return true;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    case Isa::avx2:
        return ops_avx2() != nullptr && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
        return ops_avx512() != nullptr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("fma");
#else
    default: return false;
#endif
    }
    return false;
}

std::vector<Isa> supported_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable})
        if (isa_supported(isa)) out.push_back(isa);
    return out;
}

Isa best_isa() { return supported_isas().front(); }

const Ops& ops(Isa isa) {
    if (!isa_supported(isa)) throw Error(std::string("cpu: the ") + isa_name(isa) + " kernels cannot run on this processor");
    switch (isa) {
    case Isa::avx512: return *ops_avx512();
    case Isa::avx2: return *ops_avx2();
    default: return *ops_portable();
    }
}

}  // namespace revgraph::cpu::fast
