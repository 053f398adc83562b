#include "engine/rng/epoch_orders.hpp"

#include <string>

#include "engine/error.hpp"

namespace revgraph::rng {

EpochOrders::EpochOrders(std::uint64_t seed, std::int64_t n, int count) : seed_(seed), count_(count), generator_(seed) {
    if (count < 0) throw Error("epoch_permutations: negative count " + std::to_string(count));
    if (n < 0) throw Error("permutation: negative size " + std::to_string(n));
    order_.resize(static_cast<std::size_t>(n));  // sized once: drawing an epoch allocates nothing
}

const std::vector<std::int64_t>& EpochOrders::at(std::size_t e) const {
    if (e >= size())
        throw Error("epoch " + std::to_string(e) + " out of range (" + std::to_string(size()) + " epochs)");
    if (!explicit_.empty()) return explicit_[e];
    const auto target = static_cast<long long>(e);
    if (target < current_) {  // back to the start: the generator only runs forward
        generator_ = Pcg64(seed_);
        current_ = -1;
    }
    while (current_ < target) {
        permutation_into(generator_, order_);
        ++current_;
    }
    return order_;
}

void EpochOrders::push_back(std::vector<std::int64_t> order) {
    if (explicit_.empty() && count_ > 0) throw Error("epoch orders: explicit orders cannot follow drawn ones");
    explicit_.push_back(std::move(order));
}

}  // namespace revgraph::rng
