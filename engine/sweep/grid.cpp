#include "engine/sweep/grid.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "engine/io/sha256.hpp"

namespace revgraph::sweep {
namespace {

// Integers of a range's ends: seed is unsigned 64-bit, the others signed (their own range check
// then says what is allowed).
template <typename T>
T range_end(const std::string& spec, const std::string& text) {
    T v{};
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
        throw UsageProblem("--grid " + spec + ": '" + text + "' is not an integer");
    return v;
}

template <typename T>
void expand_range(const std::string& spec, const std::string& item, std::size_t dots, std::vector<std::string>& out) {
    const T lo = range_end<T>(spec, item.substr(0, dots));
    const T hi = range_end<T>(spec, item.substr(dots + 2));
    if (hi < lo) throw UsageProblem("--grid " + spec + ": the range " + item + " is empty (A..B needs A <= B)");
    // Count in the unsigned type so that the full signed span cannot overflow.
    using U = std::make_unsigned_t<T>;
    const U span = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
    if (span >= kMaxPoints) throw UsageProblem("--grid " + spec + ": the range " + item + " has too many values");
    for (U k = 0; k <= span; ++k) out.push_back(std::to_string(static_cast<T>(static_cast<U>(lo) + k)));
}

}  // namespace

Axis parse_axis(const std::string& spec) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageProblem("--grid needs KEY=V1,V2,..., got '" + spec + "'");
    Axis axis;
    axis.key = spec.substr(0, eq);
    const auto& keys = TaskConfig::keys();
    if (std::find(keys.begin(), keys.end(), axis.key) == keys.end())
        throw UsageProblem("--grid " + spec + ": unknown key '" + axis.key + "'");
    const std::string list = spec.substr(eq + 1);
    std::vector<std::string> items;
    for (std::size_t start = 0;;) {
        const auto comma = list.find(',', start);
        items.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    for (const auto& item : items) {
        if (item.empty()) throw UsageProblem("--grid " + spec + ": an empty value");
        const auto dots = item.find("..");
        if (dots == std::string::npos) {
            axis.values.push_back(item);
        } else if (!TaskConfig::integer_key(axis.key)) {
            throw UsageProblem("--grid " + spec + ": ranges A..B are for integer keys only, " + axis.key +
                               " is not one");
        } else if (axis.key == "seed") {
            expand_range<std::uint64_t>(spec, item, dots, axis.values);
        } else {
            expand_range<std::int64_t>(spec, item, dots, axis.values);
        }
        if (axis.values.size() > kMaxPoints) throw UsageProblem("--grid " + spec + ": too many values");
    }
    // Each value as the config will hold it: parsed and checked by TaskConfig itself, and
    // compared in that form so that "0.1" and "0.10" count as one value.
    std::set<std::string> seen;
    for (const auto& value : axis.values) {
        TaskConfig c;
        try {
            c.set(axis.key, value);
        } catch (const Error& e) { throw UsageProblem("--grid " + spec + ": " + e.what()); }
        if (const auto problem = c.problem(axis.key); !problem.empty())
            throw UsageProblem("--grid " + spec + ": " + problem);
        if (!seen.insert(c.to_json()[axis.key].dump()).second)
            throw UsageProblem("--grid " + spec + ": the value " + value + " appears twice");
    }
    return axis;
}

Grid::Grid(const TaskConfig& base) : base_(base) {}

Grid::Grid(const TaskConfig& base, std::vector<Axis> axes) : base_(base), axes_(std::move(axes)) {
    std::set<std::string> keys;
    for (const auto& axis : axes_) {
        if (!keys.insert(axis.key).second) throw UsageProblem("--grid: the key " + axis.key + " is swept twice");
        if (axis.values.empty()) throw UsageProblem("--grid: the key " + axis.key + " has no values");
        if (size_ > kMaxPoints / axis.values.size())
            throw UsageProblem("--grid: more than " + std::to_string(kMaxPoints) + " points");
        size_ *= axis.values.size();
    }
}

Grid Grid::parse(const TaskConfig& base, const std::vector<std::string>& specs) {
    std::vector<Axis> axes;
    for (const auto& spec : specs) axes.push_back(parse_axis(spec));
    return Grid(base, std::move(axes));
}

std::string Grid::digest() const {
    nlohmann::ordered_json base = base_.to_json(), axes = nlohmann::ordered_json::array();
    for (const Axis& axis : axes_) {
        base.erase(axis.key);
        nlohmann::ordered_json values = nlohmann::ordered_json::array();
        TaskConfig c = base_;
        for (const std::string& value : axis.values) {
            c.set(axis.key, value);
            values.push_back(c.to_json()[axis.key]);
        }
        axes.push_back(nlohmann::ordered_json::array({axis.key, std::move(values)}));
    }
    const std::string text = nlohmann::ordered_json{{"base", base}, {"axes", axes}}.dump();
    return io::sha256_hex(text.data(), text.size());
}

TaskConfig Grid::point(std::size_t index) const {
    if (index >= size_) throw Error("sweep: point " + std::to_string(index) + " is outside the grid");
    TaskConfig c = base_;
    // Mixed radix, the last axis the least significant digit.
    for (std::size_t a = axes_.size(); a-- > 0;) {
        const auto& values = axes_[a].values;
        c.set(axes_[a].key, values[index % values.size()]);
        index /= values.size();
    }
    return c;
}

Shard parse_shard(const std::string& text) {
    const auto slash = text.find('/');
    std::size_t i = 0, n = 0;
    const auto number = [&](std::size_t from, std::size_t to, std::size_t& v) {
        auto [ptr, ec] = std::from_chars(text.data() + from, text.data() + to, v);
        return from < to && ec == std::errc() && ptr == text.data() + to;
    };
    if (slash == std::string::npos || !number(0, slash, i) || !number(slash + 1, text.size(), n))
        throw UsageProblem("--shard needs I/N (shard I of N, 0 <= I < N), got '" + text + "'");
    if (n == 0 || i >= n) throw UsageProblem("--shard " + text + ": needs 0 <= I < N");
    return Shard{i, n};
}

std::vector<std::size_t> shard_points(std::size_t grid_size, const Shard& shard) {
    std::vector<std::size_t> points;
    for (std::size_t p = shard.index; p < grid_size; p += shard.count) points.push_back(p);
    return points;
}

}  // namespace revgraph::sweep
