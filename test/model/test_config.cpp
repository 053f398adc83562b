#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "engine/closest_name.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"

using revgraph::TaskConfig;

TEST_CASE("config: defaults are rev88") {
    const TaskConfig c;
    CHECK(c.depth == 2);
    CHECK(c.width == 82);
    CHECK(c.alpha == 0.5);
    CHECK(c.seed == 11);
    CHECK(c.epochs == 2);
    CHECK(c.learning_rate == 0.1);
    CHECK(c.batch_size == 128);
    CHECK(c.momentum == 0.9);
    CHECK(c.weight_decay == 0.0);
    CHECK_NOTHROW(c.validate());
    CHECK(
        c.to_json().dump() ==
        R"({"depth":2,"width":82,"alpha":0.5,"seed":11,"epochs":2,"learning_rate":0.1,"batch_size":128,"momentum":0.9,"weight_decay":0.0})");
}

TEST_CASE("config: set parses text and rejects nonsense") {
    TaskConfig c;
    c.set("depth", "8");
    c.set("learning_rate", "0.05");
    c.set("seed", "2026091400");
    CHECK(c.depth == 8);
    CHECK(c.learning_rate == 0.05);
    CHECK(c.seed == 2026091400ull);
    CHECK_THROWS_AS(c.set("dept", "1"), revgraph::Error);
    CHECK_THROWS_AS(c.set("depth", "two"), revgraph::Error);
    CHECK_THROWS_AS(c.set("depth", "2.5"), revgraph::Error);
    CHECK_THROWS_AS(c.set("seed", "-1"), revgraph::Error);
    CHECK_THROWS_AS(c.set("alpha", ""), revgraph::Error);
}

TEST_CASE("config: validate rejects out-of-range values") {
    auto bad = [](auto mutate) {
        TaskConfig c;
        mutate(c);
        CHECK_THROWS_AS(c.validate(), revgraph::Error);
    };
    bad([](TaskConfig& c) { c.depth = 0; });
    bad([](TaskConfig& c) { c.batch_size = 0; });
    bad([](TaskConfig& c) { c.epochs = -1; });
    bad([](TaskConfig& c) { c.alpha = std::nan(""); });
    bad([](TaskConfig& c) { c.learning_rate = -0.1; });
    bad([](TaskConfig& c) { c.learning_rate = INFINITY; });
    bad([](TaskConfig& c) { c.momentum = 1.0; });
    bad([](TaskConfig& c) { c.weight_decay = -1e-3; });
}

TEST_CASE("config: JSON round trip and strict keys") {
    TaskConfig c;
    c.update_from_json(nlohmann::json::parse(R"({"depth": 1, "momentum": 0.5, "seed": 781})"));
    CHECK(c.depth == 1);
    CHECK(c.momentum == 0.5);
    CHECK(c.seed == 781);
    TaskConfig d;
    d.update_from_json(nlohmann::json::parse(c.to_json().dump()));
    CHECK(d.to_json() == c.to_json());
    CHECK_THROWS_AS(c.update_from_json(nlohmann::json::parse(R"({"depht": 1})")), revgraph::Error);
    CHECK_THROWS_AS(c.update_from_json(nlohmann::json::parse(R"({"depth": "1"})")), revgraph::Error);
    CHECK_THROWS_AS(c.update_from_json(nlohmann::json::parse(R"({"depth": 1.5})")), revgraph::Error);
    CHECK_THROWS_AS(c.update_from_json(nlohmann::json::parse(R"([1])")), revgraph::Error);
}

TEST_CASE("config: problem() names the key and the value, validate() throws the first") {
    TaskConfig c;
    for (const auto& key : TaskConfig::keys()) CHECK(c.problem(key).empty());
    c.depth = 0;
    c.momentum = 1.0;
    CHECK(c.problem("depth") == "config: depth must be in 1..1024, got 0");
    CHECK(c.problem("momentum") == "config: momentum must be in [0, 1), got 1");
    CHECK_THROWS_WITH_AS(c.validate(), "config: depth must be in 1..1024, got 0", revgraph::Error);
    c.depth = 2;
    c.learning_rate = std::nan("");
    CHECK(c.problem("learning_rate") == "config: learning_rate must be finite and >= 0, got nan");
    CHECK_THROWS_AS((void)c.problem("dropout"), revgraph::Error);
    CHECK(TaskConfig::keys().size() == 9);
}

TEST_CASE("config: an integer key takes 2.0 (a zero fraction) but not 2.5 or 1e3") {
    TaskConfig c;
    c.set("depth", "3.0");
    c.set("epochs", "4.");
    c.set("batch_size", "16.00");
    c.set("seed", "7.0");
    CHECK(c.depth == 3);
    CHECK(c.epochs == 4);
    CHECK(c.batch_size == 16);
    CHECK(c.seed == 7);
    for (const char* bad : {"2.5", "2.01", "1e3", ".0", "2.0.0", "2,0", "-", "."})
        CHECK_THROWS_AS(c.set("depth", bad), revgraph::Error);
    CHECK_THROWS_AS(c.set("seed", "-1.0"), revgraph::Error);
    TaskConfig j;
    j.update_from_json(nlohmann::json::parse(R"({"depth": 3.0, "epochs": 1.0, "batch_size": 8.0, "seed": 5.0})"));
    CHECK(j.depth == 3);
    CHECK(j.epochs == 1);
    CHECK(j.batch_size == 8);
    CHECK(j.seed == 5);
    CHECK_THROWS_AS(j.update_from_json(nlohmann::json::parse(R"({"depth": 2.5})")), revgraph::Error);
    CHECK_THROWS_AS(j.update_from_json(nlohmann::json::parse(R"({"seed": -1.0})")), revgraph::Error);
    CHECK_THROWS_AS(j.update_from_json(nlohmann::json::parse(R"({"seed": 1e300})")), revgraph::Error);
}

TEST_CASE("config: an unknown key lists the valid ones and names the nearest") {
    TaskConfig c;
    const std::string all =
        "valid keys: depth, width, alpha, seed, epochs, learning_rate, batch_size, momentum, weight_decay";
    CHECK_THROWS_WITH_AS(c.set("batchsize", "8"),
                         ("config: unknown key 'batchsize' (did you mean batch_size? " + all + ")").c_str(),
                         revgraph::Error);
    CHECK_THROWS_WITH_AS(c.set("dropout", "0.1"), ("config: unknown key 'dropout' (" + all + ")").c_str(),
                         revgraph::Error);
    CHECK_THROWS_WITH_AS(c.update_from_json(nlohmann::json::parse(R"({"learning-rate": 0.1})")),
                         ("config: unknown key 'learning-rate' (did you mean learning_rate? " + all + ")").c_str(),
                         revgraph::Error);
}

TEST_CASE("closest_name: Levenshtein distance and the plausible-typo bound") {
    using revgraph::closest_name;
    using revgraph::edit_distance;
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("flaw", "lawn") == 2);
    CHECK(edit_distance("abc", "") == 3);
    CHECK(edit_distance("--outptu", "--output") == 2);
    const std::vector<std::string> names = {"--output", "--input", "--state", "--seed"};
    CHECK(closest_name("--outptu", names) == "--output");
    CHECK(closest_name("--inptu", names) == "--input");
    CHECK(closest_name("--sede", names) == "--seed");
    CHECK(closest_name("--frobnicate", names).empty());
    CHECK(closest_name("mnsit", {"mnist", "embedded"}) == "mnist");  // two edits are always allowed
    CHECK(closest_name("rn", {"run", "data"}) == "run");
    CHECK(closest_name("abc", {"xyz"}).empty());
}

TEST_CASE("config: a config file's text is one JSON object and nothing else, NUL bytes included") {
    revgraph::TaskConfig c;
    const auto keys = c.update_from_json_text(R"({"seed": 781, "depth": 1})");
    CHECK(c.depth == 1);
    CHECK(c.seed == 781u);
    CHECK(keys.size() == 2);
    // nlohmann's parser stops at a NUL as at the end of the text; each of these must be refused
    // and leave the config as it was.
    using namespace std::string_view_literals;
    for (const auto text : {"{\"depth\": 2}\0 junk {{{"sv, "{\"depth\": 2}\0"sv, "{\"depth\":\0 2}"sv, "\0"sv}) {
        CAPTURE(text.size());
        revgraph::TaskConfig d;
        d.depth = 3;
        CHECK_THROWS_WITH_AS(d.update_from_json_text(text), doctest::Contains("NUL"), revgraph::Error);
        CHECK(d.depth == 3);
    }
    CHECK_THROWS_AS(c.update_from_json_text("{\"depth\": 2} x"), revgraph::Error);
    CHECK_THROWS_AS(c.update_from_json_text(""), revgraph::Error);
    // A key given twice (JSON parsers keep the last) is a slip, refused, the config left as it was;
    // the same key in two objects is no repeat (refused later for the nested value, not as twice).
    revgraph::TaskConfig e;
    e.epochs = 7;
    CHECK_THROWS_WITH_AS(e.update_from_json_text(R"({"epochs": 2, "depth": 1, "epochs": 3})"),
                         "config: key 'epochs' is given twice", revgraph::Error);
    CHECK(e.epochs == 7);
    CHECK(e.depth == 2);
    CHECK_THROWS_WITH_AS(e.update_from_json_text(R"({"epochs": {"epochs": 1}})"), doctest::Contains("epochs must be"),
                         revgraph::Error);
    // Nesting past io::kMaxJsonDepth is refused while parsing (printing or freeing ~100,000 levels
    // overflowed the stack); a key with a control character is shown escaped, the line whole.
    const std::string deep = "{\"epochs\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
    CHECK_THROWS_WITH_AS(e.update_from_json_text(deep), "config: JSON nested more than 64 deep", revgraph::Error);
    CHECK_THROWS_WITH_AS(e.update_from_json_text(R"({"epochs\u0000": 2})"),
                         doctest::Contains(R"(config: unknown key "epochs\u0000" (did you mean epochs?)"),
                         revgraph::Error);
}

TEST_CASE("config: width is an even integer in 82..1024, from text, JSON and validate alike") {
    TaskConfig c;
    for (const char* good : {"82", "84", "128", "256", "1024", "128.0"}) {
        CAPTURE(good);
        c.set("width", good);
        CHECK(c.problem("width").empty());
    }
    CHECK(c.width == 128);
    const std::string rule =
        "config: width must be an even integer in 82..1024 (81 pixels and at least one appended zero)";
    for (const int bad : {81, 83, 80, 0, -82, 1025, 1026, 127}) {
        CAPTURE(bad);
        c.width = bad;
        CHECK(c.problem("width") == rule + ", got " + std::to_string(bad));
        CHECK_THROWS_WITH_AS(c.validate(), (rule + ", got " + std::to_string(bad)).c_str(), revgraph::Error);
    }
    for (const char* bad : {"wide", "128.5", "1e2", "", "0x80"})
        CHECK_THROWS_WITH_AS(c.set("width", bad), doctest::Contains("config: width must be an integer"),
                             revgraph::Error);
    TaskConfig j;
    j.update_from_json(nlohmann::json::parse(R"({"width": 256})"));
    CHECK(j.width == 256);
    j.update_from_json(nlohmann::json::parse(R"({"width": 96.0})"));
    CHECK(j.width == 96);
    CHECK_THROWS_AS(j.update_from_json(nlohmann::json::parse(R"({"width": "128"})")), revgraph::Error);
    CHECK_THROWS_AS(j.update_from_json(nlohmann::json::parse(R"({"width": 128.5})")), revgraph::Error);
    CHECK(j.to_json().dump().find(R"("depth":2,"width":96,"alpha")") != std::string::npos);
}

TEST_CASE("config: integer_key names the integer keys and refuses unknown ones") {
    for (const char* key : {"depth", "width", "seed", "epochs", "batch_size"}) CHECK(TaskConfig::integer_key(key));
    for (const char* key : {"alpha", "learning_rate", "momentum", "weight_decay"}) CHECK(!TaskConfig::integer_key(key));
    CHECK_THROWS_AS((void)TaskConfig::integer_key("widht"), revgraph::Error);
}
