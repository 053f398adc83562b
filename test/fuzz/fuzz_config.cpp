// libFuzzer target: a config file's text, through the parser `--config` uses
// (TaskConfig::update_from_json_text), then the validation every run does.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/config.hpp"
#include "engine/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    revgraph::TaskConfig config;
    try {
        config.update_from_json_text(std::string_view(reinterpret_cast<const char*>(data), size));
        for (const auto& key : revgraph::TaskConfig::keys()) config.problem(key);
        config.validate();
    } catch (const revgraph::Error&) {}
    return 0;
}
