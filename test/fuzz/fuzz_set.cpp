// libFuzzer target: `--set key=value` arguments, one per line, through TaskConfig::set (what the
// CLI calls after splitting at the first '='), then the validation every run does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/config.hpp"
#include "engine/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    revgraph::TaskConfig config;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string_view kv = text.substr(start, end - start);
        start = end + 1;
        const std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        try {
            config.set(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
        } catch (const revgraph::Error&) {}
    }
    try {
        for (const auto& key : revgraph::TaskConfig::keys()) config.problem(key);
        config.validate();
        // A valid config survives its JSON form.
        revgraph::TaskConfig again;
        again.update_from_json_text(config.to_json().dump());
        if (again.to_json() != config.to_json()) __builtin_trap();
    } catch (const revgraph::Error&) {}
    return 0;
}
