#pragma once
// numpy's Generator(PCG64(seed)) as far as revgraph uses it: SeedSequence seeding, the PCG64
// XSL-RR generator with numpy's buffered 32-bit draws, and Generator.permutation (Fisher-Yates
// with masked rejection sampling), bit for bit (docs/spec.md §6a). Generator.integers draws by
// another method (Lemire's): engine/data/numpy_integers.hpp has that one.
#include <array>
#include <cstdint>
#include <vector>

namespace revgraph::rng {

// SeedSequence(seed).generate_state(4, uint64).
std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed);

class Pcg64 {
public:
    explicit Pcg64(std::uint64_t seed);
    std::uint64_t next64();
    std::uint32_t next32();  // numpy buffers the high half of a next64 for the following call
    // Uniform integer in [0, max] by numpy's masked rejection (next32 when max fits 32 bits), as
    // permutation draws it; not what Generator.integers returns.
    std::uint64_t interval(std::uint64_t max);

private:
    __extension__ unsigned __int128 state_ = 0;  // __extension__: GCC/Clang 128-bit type under -Wpedantic
    __extension__ unsigned __int128 inc_ = 0;
    bool has_uint32_ = false;
    std::uint32_t uinteger_ = 0;
    void step();
};

// Generator.permutation(n): the next permutation of 0..n-1 from this generator.
std::vector<std::int64_t> permutation(Pcg64& generator, std::int64_t n);
// The same, of 0..a.size()-1 into `a`, which keeps its storage (no allocation).
void permutation_into(Pcg64& generator, std::vector<std::int64_t>& a);

// The permutations of epochs 0..count-1 of a task: count successive calls on one generator.
std::vector<std::vector<std::int64_t>> epoch_permutations(std::uint64_t seed, std::int64_t n, int count);

}  // namespace revgraph::rng
