#pragma once
// A sweep's grid: the base config crossed with every value of every swept key, numbered in a
// fixed order, and the fixed split of those numbers into shards.
//
// Order: the first --grid key varies slowest and the last fastest (nested loops in the order the
// keys were given), so `--grid seed=1..3 --grid depth=1,2` is (1,1) (1,2) (2,1) (2,2) (3,1) (3,2)
// as (seed, depth). Shards: point i belongs to shard i % N (round robin, so that every shard gets
// a like mix of cheap and costly points whatever axis the cost follows).
#include <cstddef>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/error.hpp"

namespace revgraph::sweep {

// A mistake in how a sweep was asked for (--grid, --shard): the command line reports it as a
// usage error (exit 2) rather than a data error.
class UsageProblem : public Error {
public:
    using Error::Error;
};

// No grid larger than this: a typo such as seed=1..10000000000 fails at once instead of filling
// the memory with point numbers.
inline constexpr std::size_t kMaxPoints = 10'000'000;

struct Axis {
    std::string key;                  // one of TaskConfig::keys()
    std::vector<std::string> values;  // in the order given, ranges expanded; each valid for `key`
};

// "KEY=V1,V2,...": values separated by commas; an integer key (depth, width, seed, epochs,
// batch_size) also takes inclusive ranges A..B among them ("seed=1..5,9"); a width range holds odd
// widths, which are refused, so widths are listed ("width=82,128,256"). Every value must be valid for the
// key and no value may appear twice (0.1 and 0.10 are one value). Throws UsageProblem.
Axis parse_axis(const std::string& spec);

class Grid {
public:
    // The base config alone: a grid of one point.
    explicit Grid(const TaskConfig& base);
    // Throws UsageProblem when a key is swept twice or the grid has more than kMaxPoints points.
    Grid(const TaskConfig& base, std::vector<Axis> axes);
    // parse_axis of every spec, in order.
    static Grid parse(const TaskConfig& base, const std::vector<std::string>& specs);

    std::size_t size() const { return size_; }
    // The config of point `index` (< size()): the base with each swept key set to its value.
    TaskConfig point(std::size_t index) const;
    const std::vector<Axis>& axes() const { return axes_; }
    // sha256 of what the grid is: the base config less the swept keys, then each axis's key and
    // values as the config reads them (seed=1..3 and seed=1,2,3, alpha=0.1 and alpha=0.10 are one
    // grid). Every line of a sweep carries it, so that a merge can tell shards of one grid from
    // another's, even where their point counts, backend and inputs agree.
    std::string digest() const;
    const TaskConfig& base() const { return base_; }

private:
    TaskConfig base_;
    std::vector<Axis> axes_;
    std::size_t size_ = 1;
};

struct Shard {
    std::size_t index = 0;  // 0-based
    std::size_t count = 1;
    bool contains(std::size_t point) const { return point % count == index; }
};

// "I/N" with 0 <= I < N (0-based, as a Slurm array 0..N-1 numbers its tasks). Throws UsageProblem.
Shard parse_shard(const std::string& text);

// The points of `shard` in grid order.
std::vector<std::size_t> shard_points(std::size_t grid_size, const Shard& shard);

}  // namespace revgraph::sweep
