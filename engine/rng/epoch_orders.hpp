#pragma once
// The epoch permutations of a task, drawn when they are needed: the order of epoch e is the
// (e+1)-th Generator(PCG64(seed)).permutation(n), the same bits as epoch_permutations(), but
// only the current epoch's order is kept, so host memory does not grow with the epoch count.
// Asking for epochs in order costs one permutation each, and no allocation (the one order
// buffer is sized at construction); going back restarts from the seed.
// Tests may instead hand in explicit orders with push_back() (then every one is kept).
// Not thread-safe: each backend keeps its own copy (copies are small).
#include <cstdint>
#include <vector>

#include "engine/rng/pcg64.hpp"

namespace revgraph::rng {

class EpochOrders {
public:
    EpochOrders() = default;
    EpochOrders(std::uint64_t seed, std::int64_t n, int count);

    // The number of epochs.
    std::size_t size() const { return explicit_.empty() ? static_cast<std::size_t>(count_) : explicit_.size(); }
    bool empty() const { return size() == 0; }
    // Epoch e's order: valid until the next call with another epoch. Throws Error out of range.
    const std::vector<std::int64_t>& at(std::size_t e) const;
    const std::vector<std::int64_t>& operator[](std::size_t e) const { return at(e); }
    // Explicit orders instead of drawn ones (tests of plans and backends with their own orders).
    void push_back(std::vector<std::int64_t> order);

private:
    std::uint64_t seed_ = 0;
    int count_ = 0;
    std::vector<std::vector<std::int64_t>> explicit_;
    // The drawing state: the generator after epoch `current_`, whose order is `order_`.
    mutable Pcg64 generator_{0};
    mutable long long current_ = -1;
    mutable std::vector<std::int64_t> order_;
};

}  // namespace revgraph::rng
