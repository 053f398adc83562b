#include "engine/config_from.hpp"

#include <map>
#include <string_view>

#include "engine/io/atomic_file.hpp"

namespace revgraph {

TaskConfig config_from(const std::optional<std::string>& file, const std::vector<std::string>& sets) {
    TaskConfig config;
    std::map<std::string, std::string> origin;  // key -> the file or --set that gave its value
    if (file) {
        const auto bytes = io::read_file(*file);
        std::vector<std::string> keys;
        try {
            keys = config.update_from_json_text(
                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        } catch (const Error& e) { throw Error(*file + ": " + e.what()); }
        for (const auto& key : keys) origin[key] = *file + ": ";
    }
    for (const auto& kv : sets) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw SetSyntaxError("--set needs key=value, got '" + kv + "'");
        const std::string key = kv.substr(0, eq);
        try {
            config.set(key, kv.substr(eq + 1));
        } catch (const Error& e) { throw Error("--set " + kv + ": " + e.what()); }
        origin[key] = "--set " + kv + ": ";
    }
    for (const auto& key : TaskConfig::keys())
        if (const auto problem = config.problem(key); !problem.empty()) throw Error(origin[key] + problem);
    return config;
}

}  // namespace revgraph
