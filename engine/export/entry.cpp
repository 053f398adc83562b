#include "engine/export/entry.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "engine/export/entry_sources.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/json_text.hpp"
#include "engine/qualify/protocol.hpp"
#include "engine/version.hpp"

namespace revgraph::exporter {

namespace {

void replace_once(std::string& text, const std::string& marker, const std::string& value) {
    const std::size_t at = text.find(marker);
    if (at == std::string::npos) throw Error("export: the entry template has no " + marker);
    text.replace(at, marker.size(), value);
}

// The CUDA text as Python raw string literals of at most kMaxLiteralChars characters each, cut at line
// ends, one a line of the tuple CUDA = (...).
std::string cuda_literals(const std::string& cuda) {
    if (cuda.find("\"\"\"") != std::string::npos || cuda.find('\\') != std::string::npos)
        throw Error("export: the kernel text holds a triple quote or a backslash: it cannot be a raw Python literal");
    std::vector<std::string> chunks(1);
    std::istringstream lines(cuda);
    for (std::string line; std::getline(lines, line);) {
        line += '\n';
        if (line.size() > kMaxLiteralChars) throw Error("export: a kernel line is longer than a literal may be");
        if (chunks.back().size() + line.size() > kMaxLiteralChars) chunks.emplace_back();
        chunks.back() += line;
    }
    std::string out;
    for (const std::string& c : chunks) out += "    r\"\"\"" + c + "\"\"\",\n";
    return out.substr(0, out.size() - 1);  // the tuple's closing line follows
}

// The commit the entry was exported from, abbreviated, its "-dirty" kept: an entry never claims a
// commit it was not made from.
std::string short_commit() {
    const std::string c = git_commit();
    const std::size_t dirty = c.find("-dirty");
    return c.substr(0, std::min<std::size_t>(12, dirty)) + (dirty == std::string::npos ? "" : "-dirty");
}

std::string title(const EntrySource& s) {
    const TaskConfig& c = s.config;
    std::ostringstream t;
    t << "revgraph, band " << s.band << " %: depth " << c.depth << ", width " << c.width << ", " << c.epochs
      << " epochs at batch " << c.batch_size << " (" << s.origin << ")";
    std::string text = t.str();  // it opens the entry's docstring: no quote or backslash may end it early
    for (char& ch : text)
        if (ch == '"' || ch == '\\') ch = '\'';
    return text;
}

// " (105723 of 110000 correct, 106700 required)" from a band's record, where it has the counts.
std::string count_words(const nlohmann::json& entry) {
    const auto number = [&](const char* key) {
        return entry.contains(key) && entry[key].is_number_integer() ? std::to_string(entry[key].get<long long>())
                                                                     : std::string();
    };
    const std::string correct = number("total_correct"), total = number("total"), required = number("required_correct");
    if (correct.empty() || total.empty() || required.empty()) return "";
    return " (" + correct + " of " + total + " correct, " + required + " required)";
}

// " (96000 correct in all, worst draw 8600)" from race.json's verify record, where it has them.
std::string verify_words(const nlohmann::json& verify) {
    if (!verify.contains("total") || !verify["total"].is_number_integer() || !verify.contains("worst_draw") ||
        !verify["worst_draw"].is_number_integer())
        return "";
    return " (" + std::to_string(verify["total"].get<long long>()) + " correct in all, worst draw " +
           std::to_string(verify["worst_draw"].get<long long>()) + ")";
}

}  // namespace

void require_race_band(const std::string& band) {
    const auto& bands = qualify::leaderboard_bands();
    if (std::find(bands.begin(), bands.end(), band) == bands.end())
        throw Error("export: the band must be one of the challenge's leaderboards " +
                    qualify::leaderboard_band_words() + ", got '" + band + "'");
}

std::string entry_file(const EntrySource& s) {
    require_race_band(s.band);
    if (!s.recorded_failure.empty())
        throw Error("export: " + s.recorded_failure + ": its entry would fail the leaderboard");
    s.config.validate();
    std::string text = entry_template();
    replace_once(text, "@BAND@", s.band);
    replace_once(text, "@TITLE@", title(s));
    replace_once(text, "@SOURCE@",
                 std::string("Written by `revgraph export`, revgraph ") + version() + " at " + short_commit());
    replace_once(text, "@CONFIG@", s.config.to_json().dump());
    replace_once(text, "@CUDA@", cuda_literals(kernel_text()));
    if (text.size() > kMaxEntryBytes)
        throw Error("export: the entry would be " + std::to_string(text.size()) + " bytes, over the challenge's " +
                    std::to_string(kMaxEntryBytes));
    return text;
}

EntrySource entry_from_bands_file(const std::string& path, const std::string& band) {
    require_race_band(band);  // a band no leaderboard has is that, whatever the file holds
    const std::vector<std::uint8_t> bytes = io::read_file(path);  // the engine's one reader, its messages
    nlohmann::json doc;
    try {
        doc = io::parse_json_text(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    } catch (const nlohmann::json::exception&) {
        throw Error("export: " + path + " is not JSON");
    } catch (const Error& e) { throw Error("export: " + path + ": " + e.what()); }
    if (!doc.is_object() || !doc.contains("bands") || !doc["bands"].is_array())
        throw Error("export: " + path +
                    " has no \"bands\" list (bench/race.json and bench/frontier/frontier.json have one)");
    std::vector<std::string> found;
    for (const auto& entry : doc["bands"]) {
        if (!entry.is_object() || !entry.contains("band") || !entry["band"].is_string()) continue;
        found.push_back(entry["band"].get<std::string>());
        if (found.back() != band) continue;
        if (!entry.contains("config") || !entry["config"].is_object())
            throw Error("export: band " + band + " of " + path + " has no config object");
        EntrySource s;
        s.band = band;
        try {
            s.config.update_from_json(entry["config"]);
        } catch (const Error& e) { throw Error("export: band " + band + " of " + path + ": " + e.what()); }
        s.origin = std::filesystem::path(path).filename().string() + ", band " + band;  // no local path in an entry
        // A band its own file records as failed would be an entry that fails its leaderboard
        // (entry_file refuses it), with the file's count where it has one.
        if (entry.contains("qualified") && entry["qualified"] == false)
            s.recorded_failure = "band " + band + " of " + path + " did not qualify there" + count_words(entry);
        if (entry.contains("verify") && entry["verify"].is_object() && entry["verify"].contains("passed") &&
            entry["verify"]["passed"] == false)
            s.recorded_failure =
                "band " + band + " of " + path + " failed its verification there" + verify_words(entry["verify"]);
        return s;
    }
    std::string list;
    for (const std::string& b : found) list += (list.empty() ? "" : ", ") + b;
    const std::string has = list.empty() ? "" : " (it has " + list + ")";
    // bench/race.json lists the bands its search did not reach: say so, not that the file forgot one.
    if (doc.contains("unreached") && doc["unreached"].is_array())
        for (const auto& u : doc["unreached"])
            if (u.is_object() && u.contains("band") && u["band"] == band)
                throw Error("export: " + path + " records band " + band +
                            " as unreached: no configuration its search tried passed it" + has);
    throw Error("export: " + path + " has no band " + band + has);
}

}  // namespace revgraph::exporter
