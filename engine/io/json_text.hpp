#pragma once
// The JSON a user hands the engine (a config, a file of bands, a sweep line, a submission's files),
// read by nlohmann's parser with two refusals it does not make itself:
//  - a key an object names twice: the parser keeps the last, so what a reader checks (verify's
//    "qualified", a config's epochs) need not be what the file's first reader saw;
//  - nesting deeper than kMaxJsonDepth: nlohmann parses (and frees) any depth without recursion,
//    but printing, copying and comparing a value recurse, and ~100,000 levels overflow the stack (a
//    crash, not an error line). Nothing the engine reads nests past a few levels.
// Both are an Error naming the key or the depth; text that is no JSON at all is nlohmann's
// parse_error, as from nlohmann::json::parse, which each caller words for its file.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"

namespace revgraph::io {

inline constexpr int kMaxJsonDepth = 64;

template <class Json = nlohmann::json>
Json parse_json_text(std::string_view text) {
    std::vector<std::set<std::string>> keys;  // the keys seen in each object open around the parser
    const auto check = [&keys](int depth, typename Json::parse_event_t event, Json& parsed) {
        using E = typename Json::parse_event_t;
        if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth)
            throw Error("JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
        if (event == E::object_start) keys.emplace_back();
        if (event == E::object_end) keys.pop_back();
        if (event == E::key && !keys.back().insert(parsed.template get<std::string>()).second)
            throw Error("key '" + parsed.template get<std::string>() + "' is given twice");
        return true;
    };
    return Json::parse(text, check);
}

}  // namespace revgraph::io
