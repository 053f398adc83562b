#include "engine/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/closest_name.hpp"
#include "engine/error.hpp"
#include "engine/io/json_text.hpp"

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
    // All digits, too many for 64 bits: a number, too large (as a Python int or a JSON file says).
    require(!(ec == std::errc::result_out_of_range && ptr == last), "config: " + key + " is out of range: " + text);
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
    require(!(ec == std::errc::result_out_of_range && ptr == last), "config: " + key + " is out of range: " + text);
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
    // A key with a control character (a JSON "\u0000" above all, which would end the line where
    // it stands) is shown as JSON escapes it.
    const bool plain = std::none_of(key.begin(), key.end(), [](char c) { return c >= 0 && c < 0x20; });
    const std::string shown_key =
        plain ? "'" + key + "'" : nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    throw Error("config: unknown key " + shown_key + " (" + (near.empty() ? "" : "did you mean " + near + "? ") +
                "valid keys: " + valid + ")");
}

// 2^53: up to it every whole double is exactly the integer it is written as.
constexpr double kExactWholeLimit = 9007199254740992.0;

// A JSON number that names an integer: an integer, or a float with no fraction (2.0) small enough
// (|v| <= 2^53) that the float is that integer exactly.
bool json_integral(const nlohmann::json& value) {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    const double v = value.get<double>();
    return std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= kExactWholeLimit;
}

// A whole float past 2^53 (1e300, 2.0**60): an integer all the same, too large for any integer key.
bool json_huge_whole(const nlohmann::json& value) {
    if (!value.is_number_float()) return false;
    const double v = value.get<double>();
    return std::isfinite(v) && v == std::floor(v) && std::fabs(v) > kExactWholeLimit;
}

// A value as a message shows it: its JSON text, cut to 40 characters (a 100 KB string is no message).
std::string shown(const nlohmann::json& value) {
    // A non-finite float (only Python can hand one over: JSON text has none) dumps as "null".
    if (value.is_number_float() && !std::isfinite(value.get<double>()))
        return std::isnan(value.get<double>()) ? "nan" : value.get<double>() > 0 ? "inf" : "-inf";
    const std::string text = value.dump();
    return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// `as_written`: the value as the caller wrote it, for the message (v may be clamped, 2^64-1 to 2^40).
int narrow_int(const std::string& key, std::int64_t v, const std::string& as_written) {
    require(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
            "config: " + key + " is out of range: " + as_written);
    return static_cast<int>(v);
}

}  // namespace

namespace {

// The nine keys of docs/spec.md §1, once: name (in the spec's order), the member behind it and the
// range it must lie in. keys(), integer_key(), problem(), set(), to_json() and update_from_json()
// all read this table, so they cannot disagree on which keys exist, their types or their ranges.
struct Key {
    const char* name;
    int TaskConfig::*integer = nullptr;  // depth, width, epochs, batch_size
    double TaskConfig::*real = nullptr;  // alpha, learning_rate, momentum, weight_decay
    int min = 0, max = 0;                // an integer key's range
    bool (*real_ok)(double) = nullptr;   // a real key's range (finiteness is checked for all)
    const char* real_expected = "";      // "in [0, 1)": what the message says a real key must be
};

const std::vector<Key>& key_table() {
    static const std::vector<Key> table = {
        {"depth", &TaskConfig::depth, nullptr, 1, kMaxDepth},
        {"width", &TaskConfig::width, nullptr, kMinWidth, kMaxWidth},
        {"alpha", nullptr, &TaskConfig::alpha, 0, 0, [](double) { return true; }, "finite"},
        {"seed"},  // the one unsigned 64-bit key: every value is in range
        {"epochs", &TaskConfig::epochs, nullptr, 0, kMaxEpochs},
        {"learning_rate", nullptr, &TaskConfig::learning_rate, 0, 0, [](double v) { return v >= 0.0; },
         "finite and >= 0"},
        {"batch_size", &TaskConfig::batch_size, nullptr, 1, kMaxBatch},
        {"momentum", nullptr, &TaskConfig::momentum, 0, 0, [](double v) { return v >= 0.0 && v < 1.0; }, "in [0, 1)"},
        {"weight_decay", nullptr, &TaskConfig::weight_decay, 0, 0, [](double v) { return v >= 0.0; },
         "finite and >= 0"},
    };
    return table;
}

const Key& find_key(const std::string& key) {
    for (const Key& k : key_table())
        if (key == k.name) return k;
    unknown_key(key);
}

}  // namespace

const std::vector<std::string>& TaskConfig::keys() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Key& k : key_table()) out.push_back(k.name);
        return out;
    }();
    return names;
}

bool TaskConfig::integer_key(const std::string& key) { return find_key(key).real == nullptr; }

std::string TaskConfig::problem(const std::string& key) const {
    const Key& k = find_key(key);
    if (k.integer != nullptr) {
        const int v = this->*k.integer;
        if (k.integer == &TaskConfig::width)
            return v >= k.min && v <= k.max && v % 2 == 0
                       ? std::string()
                       : "config: width must be an even integer in " + std::to_string(k.min) + ".." +
                             std::to_string(k.max) + " (81 pixels and at least one appended zero), got " +
                             std::to_string(v);
        return v >= k.min && v <= k.max ? std::string()
                                        : "config: " + key + " must be in " + std::to_string(k.min) + ".." +
                                              std::to_string(k.max) + ", got " + std::to_string(v);
    }
    if (k.real != nullptr) {
        const double v = this->*k.real;
        if (std::isfinite(v) && k.real_ok(v)) return {};
        std::ostringstream got;
        got << v;
        return "config: " + key + " must be " + k.real_expected + ", got " + got.str();
    }
    return {};  // seed
}

void TaskConfig::validate() const {
    for (const auto& key : keys())
        if (auto p = problem(key); !p.empty()) throw Error(p);
}

void TaskConfig::set(const std::string& key, const std::string& value) {
    const Key& k = find_key(key);
    if (k.integer != nullptr)
        this->*k.integer = narrow_int(key, parse_integer(key, value), value);
    else if (k.real != nullptr)
        this->*k.real = parse_real(key, value);
    else
        seed = parse_unsigned(key, value);
}

nlohmann::ordered_json TaskConfig::to_json() const {
    nlohmann::ordered_json j;
    for (const Key& k : key_table()) {
        if (k.integer != nullptr)
            j[k.name] = this->*k.integer;
        else if (k.real != nullptr)
            j[k.name] = this->*k.real;
        else
            j[k.name] = seed;
    }
    return j;
}

void TaskConfig::update_from_json(const nlohmann::json& object) {
    require(object.is_object(), "config: expected a JSON object");
    for (const auto& [key, value] : object.items()) {
        const Key& k = find_key(key);
        if (k.integer == nullptr && k.real == nullptr) {  // seed
            if (value.is_number_float()) {
                // 5.0 is the integer 5 (a tool may write every number as a float); 5.5 is refused.
                require(!json_huge_whole(value), "config: seed is out of range: " + shown(value));
                require(json_integral(value), "config: seed must be an integer, got " + shown(value));
                require(value.get<double>() >= 0, "config: seed must be a non-negative integer, got " + shown(value));
                seed = static_cast<std::uint64_t>(value.get<double>());
            } else {
                require(value.is_number_integer(), "config: seed must be an integer, got " + shown(value));
                require(value.is_number_unsigned() || value.get<std::int64_t>() >= 0,
                        "config: seed must be a non-negative integer, got " + shown(value));
                seed = value.get<std::uint64_t>();
            }
        } else if (k.integer != nullptr) {
            int& i = this->*k.integer;
            if (value.is_number_float()) {
                require(!json_huge_whole(value), "config: " + key + " is out of range: " + shown(value));
                require(json_integral(value), "config: " + key + " must be an integer, got " + shown(value));
                i = narrow_int(key, static_cast<std::int64_t>(value.get<double>()), shown(value));
            } else {
                require(value.is_number_integer(), "config: " + key + " must be an integer, got " + shown(value));
                i = narrow_int(key,
                               value.is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                                value.get<std::uint64_t>(), 1ull << 40))
                                                          : value.get<std::int64_t>(),
                               shown(value));
            }
        } else {
            require(value.is_number(), "config: " + key + " must be a number, got " + shown(value));
            this->*k.real = value.get<double>();
        }
    }
}

std::vector<std::string> TaskConfig::update_from_json_text(std::string_view text) {
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw Error("config: not valid JSON (a NUL byte at offset " + std::to_string(nul) + ")");
    nlohmann::json j;
    try {  // a key given twice is a slip (two values for one key), refused as any bad key is
        j = io::parse_json_text(text);
    } catch (const nlohmann::json::exception&) { throw Error("config: not valid JSON"); } catch (const Error& e) {
        throw Error(std::string("config: ") + e.what());
    }
    update_from_json(j);
    std::vector<std::string> set;
    for (const auto& item : j.items()) set.push_back(item.key());
    return set;
}

}  // namespace revgraph
