#include "engine/config.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/closest_name.hpp"
#include "engine/error.hpp"

namespace revgraph {
namespace {

constexpr int kMaxDepth = 1024;
constexpr int kMinWidth = 82;  // 81 pixels + one zero: the smallest injective lift
constexpr int kMaxWidth = 1024;
constexpr int kMaxEpochs = 1000000;
constexpr int kMaxBatch = 1 << 20;

void require(bool ok, const std::string& message) {
    if (!ok) throw Error(message);
}

// An integer may carry a zero fraction ("2.0", "2."): a value written by a tool that prints every
// number as a float is still the integer it names. Exponents and non-zero fractions are refused.
std::string without_zero_fraction(const std::string& text) {
    const auto dot = text.find('.');
    if (dot == std::string::npos || dot == 0) return text;
    for (std::size_t i = dot + 1; i < text.size(); ++i)
        if (text[i] != '0') return text;
    return text.substr(0, dot);
}

std::int64_t parse_integer(const std::string& key, const std::string& text) {
    const std::string digits = without_zero_fraction(text);
    std::int64_t value = 0;
    const char* first = digits.data();
    const char* last = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    require(ec == std::errc() && ptr == last && !digits.empty() && digits != "-",
            "config: " + key + " must be an integer, got '" + text + "'");
    return value;
}

std::uint64_t parse_unsigned(const std::string& key, const std::string& text) {
    const std::string digits = without_zero_fraction(text);
    std::uint64_t value = 0;
    const char* first = digits.data();
    const char* last = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    require(ec == std::errc() && ptr == last && !digits.empty(),
            "config: " + key + " must be a non-negative integer, got '" + text + "'");
    return value;
}

double parse_real(const std::string& key, const std::string& text) {
    // strtod accepts "nan"/"inf", which validate() then rejects with a clearer message.
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    require(!text.empty() && end == text.c_str() + text.size(),
            "config: " + key + " must be a number, got '" + text + "'");
    return value;
}

// "config: unknown key 'dept' (did you mean depth? valid keys: depth, alpha, ...)"
[[noreturn]] void unknown_key(const std::string& key) {
    std::string valid;
    for (const auto& k : TaskConfig::keys()) valid += (valid.empty() ? "" : ", ") + k;
    const std::string near = closest_name(key, TaskConfig::keys());
    throw Error("config: unknown key '" + key + "' (" + (near.empty() ? "" : "did you mean " + near + "? ") +
                "valid keys: " + valid + ")");
}

// A JSON number that names an integer: an integer, or a float with no fraction (2.0) small enough
// (|v| <= 2^53) that the float is that integer exactly.
bool json_integral(const nlohmann::json& value) {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    const double v = value.get<double>();
    return std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 9007199254740992.0;
}

int narrow_int(const std::string& key, std::int64_t v) {
    require(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
            "config: " + key + " is out of range: " + std::to_string(v));
    return static_cast<int>(v);
}

}  // namespace

const std::vector<std::string>& TaskConfig::keys() {
    static const std::vector<std::string> k = {"depth",         "width",      "alpha",    "seed",        "epochs",
                                               "learning_rate", "batch_size", "momentum", "weight_decay"};
    return k;
}

namespace {

// The members behind the keys, by kind: one place that maps a name to its field, so set(),
// update_from_json() and to_json() cannot disagree on which keys exist or what type they hold.
int* int_member(TaskConfig& c, const std::string& key) {
    if (key == "depth") return &c.depth;
    if (key == "width") return &c.width;
    if (key == "epochs") return &c.epochs;
    if (key == "batch_size") return &c.batch_size;
    return nullptr;
}

double* real_member(TaskConfig& c, const std::string& key) {
    if (key == "alpha") return &c.alpha;
    if (key == "learning_rate") return &c.learning_rate;
    if (key == "momentum") return &c.momentum;
    if (key == "weight_decay") return &c.weight_decay;
    return nullptr;
}

}  // namespace

bool TaskConfig::integer_key(const std::string& key) {
    TaskConfig c;
    if (key == "seed" || int_member(c, key)) return true;
    if (real_member(c, key)) return false;
    unknown_key(key);
}

std::string TaskConfig::problem(const std::string& key) const {
    auto range = [&](int v, int lo, int hi) {
        return v >= lo && v <= hi ? std::string()
                                  : "config: " + key + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) +
                                        ", got " + std::to_string(v);
    };
    // ok: the value is finite and `ok_range` holds; otherwise say what was expected and what came.
    auto real = [&](double v, bool ok_range, const char* expected) {
        if (std::isfinite(v) && ok_range) return std::string();
        std::ostringstream got;
        got << v;
        return "config: " + key + " must be " + expected + ", got " + got.str();
    };
    if (key == "depth") return range(depth, 1, kMaxDepth);
    if (key == "width")
        return width >= kMinWidth && width <= kMaxWidth && width % 2 == 0
                   ? std::string()
                   : "config: width must be an even integer in " + std::to_string(kMinWidth) + ".." +
                         std::to_string(kMaxWidth) + " (81 pixels and at least one appended zero), got " +
                         std::to_string(width);
    if (key == "alpha") return real(alpha, true, "finite");
    if (key == "seed") return {};
    if (key == "epochs") return range(epochs, 0, kMaxEpochs);
    if (key == "learning_rate") return real(learning_rate, learning_rate >= 0.0, "finite and >= 0");
    if (key == "batch_size") return range(batch_size, 1, kMaxBatch);
    if (key == "momentum") return real(momentum, momentum >= 0.0 && momentum < 1.0, "in [0, 1)");
    if (key == "weight_decay") return real(weight_decay, weight_decay >= 0.0, "finite and >= 0");
    unknown_key(key);
}

void TaskConfig::validate() const {
    for (const auto& key : keys())
        if (auto p = problem(key); !p.empty()) throw Error(p);
}

void TaskConfig::set(const std::string& key, const std::string& value) {
    if (key == "seed")
        seed = parse_unsigned(key, value);
    else if (int* i = int_member(*this, key))
        *i = narrow_int(key, parse_integer(key, value));
    else if (double* r = real_member(*this, key))
        *r = parse_real(key, value);
    else
        unknown_key(key);
}

nlohmann::ordered_json TaskConfig::to_json() const {
    nlohmann::ordered_json j;
    j["depth"] = depth;
    j["width"] = width;
    j["alpha"] = alpha;
    j["seed"] = seed;
    j["epochs"] = epochs;
    j["learning_rate"] = learning_rate;
    j["batch_size"] = batch_size;
    j["momentum"] = momentum;
    j["weight_decay"] = weight_decay;
    return j;
}

void TaskConfig::update_from_json(const nlohmann::json& object) {
    require(object.is_object(), "config: expected a JSON object");
    for (const auto& [key, value] : object.items()) {
        if (key == "seed") {
            if (value.is_number_float()) {
                // 5.0 is the integer 5 (a tool may write every number as a float); 5.5 is refused.
                require(json_integral(value), "config: seed must be an integer");
                require(value.get<double>() >= 0, "config: seed must be a non-negative integer");
                seed = static_cast<std::uint64_t>(value.get<double>());
            } else {
                require(value.is_number_integer(), "config: seed must be an integer");
                require(value.is_number_unsigned() || value.get<std::int64_t>() >= 0,
                        "config: seed must be a non-negative integer");
                seed = value.get<std::uint64_t>();
            }
        } else if (int* i = int_member(*this, key)) {
            if (value.is_number_float()) {
                require(json_integral(value), "config: " + key + " must be an integer");
                *i = narrow_int(key, static_cast<std::int64_t>(value.get<double>()));
            } else {
                require(value.is_number_integer(), "config: " + key + " must be an integer");
                *i = narrow_int(key, value.is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                                      value.get<std::uint64_t>(), 1ull << 40))
                                                                : value.get<std::int64_t>());
            }
        } else if (double* r = real_member(*this, key)) {
            require(value.is_number(), "config: " + key + " must be a number");
            *r = value.get<double>();
        } else {
            unknown_key(key);
        }
    }
}

std::vector<std::string> TaskConfig::update_from_json_text(std::string_view text) {
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw Error("config: not valid JSON (a NUL byte at offset " + std::to_string(nul) + ")");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) { throw Error("config: not valid JSON"); }
    update_from_json(j);
    std::vector<std::string> set;
    for (const auto& item : j.items()) set.push_back(item.key());
    return set;
}

}  // namespace revgraph
