#include "tools/revgraph/args.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace revgraph::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
           const std::set<std::string>& flags) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a.rfind("--", 0) != 0 || a == "--") {
            positional_.push_back(a);
            continue;
        }
        std::string name = a.substr(2), value;
        bool has_value = false;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_value = true;
        }
        if (flags.count(name)) {
            if (has_value) throw UsageError{"option --" + name + " takes no value"};
            flags_.insert(name);
        } else if (options.count(name)) {
            if (!has_value) {
                // `--input --quiet` is a forgotten value, not a file named "--quiet"; a value
                // that really starts with "--" can be given as --name=--value.
                if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
                    throw UsageError{"option --" + name + " needs a value"};
                value = argv[++i];
            }
            // No option means anything by an empty value ("--output ''" from an unset variable).
            if (value.empty()) throw UsageError{"option --" + name + " needs a value, got an empty one"};
            values_[name].push_back(value);
        } else {
            throw UsageError{"unknown option --" + name};
        }
    }
}

std::optional<std::string> Args::get(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::all(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v < min || v > max)
        throw UsageError{"option --" + option + " needs an integer in " + std::to_string(min) + ".." +
                         std::to_string(max) + ", got '" + text + "'"};
    return v;
}

double parse_double(const std::string& option, const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        throw UsageError{"option --" + option + " needs a finite number, got '" + text + "'"};
    return v;
}

}  // namespace revgraph::cli
