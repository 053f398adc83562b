// revgraph band: the error band's exact numbers (engine/qualify/band.hpp, docs/spec.md §9) for a
// number of query images, as JSON. Why a command: the race harness (tools/race) judges a band with
// the engine's one rule, and on a machine where the built Python package does not import into the
// python3 at hand (a GPU machine's CUDA PyTorch is often another Python version than the build's),
// it asks this binary instead of writing the rule a second time. With --correct it gives the
// verdict itself (qualify::verdict_of_counts, the rule qualify judges by).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "engine/qualify/band.hpp"
#include "engine/qualify/protocol.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

namespace {

struct BandOptions {
    std::string band, total, per_draw;            // the counts as given, read by parse_int (one message for any)
    std::string correct;                          // each draw's correct count, comma-separated
    bool has_total = false, has_correct = false;  // given on the command line (an empty value too)
};

int band_command(const BandOptions& o) {
    qualify::Band band;
    try {  // a band that is no decimal percentage is a usage error (exit 2), as qualify's is
        band = qualify::Band::parse(o.band, "band: --band");
    } catch (const Error& e) { throw UsageError{e.what()}; }
    if (o.has_total == o.has_correct) throw UsageError{"band: give --total or --correct (one of the two)"};
    const std::int64_t per_draw = parse_int("per-draw", o.per_draw, 1, INT64_MAX);
    nlohmann::ordered_json j;
    j["band"] = band.text();
    if (o.has_total) {
        const std::int64_t total = parse_int("total", o.total, 0, INT64_MAX);
        try {
            qualify::check_band_counts(total, per_draw);
        } catch (const Error& e) { throw UsageError{std::string("band: ") + e.what()}; }
        j["total"] = total;
        j["per_draw"] = per_draw;
        j["required_correct"] = band.required_correct(total);
        j["per_draw_floor"] = band.per_draw_floor(per_draw);
    } else {
        std::vector<std::int64_t> correct;
        for (std::size_t at = 0;;) {  // "a,b,c": each an integer, none empty
            const std::size_t comma = o.correct.find(',', at);
            correct.push_back(parse_int("correct", o.correct.substr(at, comma - at), 0, INT64_MAX));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        qualify::Verdict v;
        try {  // counts no draw can have (more correct than per_draw): a usage error, as a bad count is
            v = qualify::verdict_of_counts(correct, std::vector<std::int64_t>(correct.size(), per_draw), band);
        } catch (const Error& e) { throw UsageError{std::string("band: --correct: ") + e.what()}; }
        j["total"] = v.total_count;
        j["per_draw"] = per_draw;
        j["required_correct"] = v.required_correct;
        j["per_draw_floor"] = v.per_draw_floor;
        j["passed"] = v.passed();
        j["total_correct"] = v.total_correct;
        j["meets_total"] = v.meets_accuracy_target;
        j["meets_floor"] = v.per_draw_floor_met;
        j["draws_below_floor"] = v.draws_below_floor;
    }
    write_stdout(j.dump() + "\n");
    return 0;
}

}  // namespace

Command add_band_command(CLI::App& app) {
    auto o = std::make_shared<BandOptions>();
    CLI::App* sub = app.add_subcommand(
        "band", "an error band's exact numbers for N query images: the correct total it needs and the per-draw floor");
    sub->add_option("--band", o->band, "the error band in percent, a decimal number such as 12 or 7.5")
        ->required()
        ->check(kNonEmpty);
    CLI::Option* total = sub->add_option("--total", o->total, "query images in all (e.g. 110000: 11 draws of 10,000)");
    sub->add_option("--per-draw", o->per_draw, "query images a draw (e.g. 10000)")->required();
    CLI::Option* correct =
        sub->add_option("--correct", o->correct,
                        "in place of --total: each draw's correct count, comma-separated (e.g. 9312,9290), for the "
                        "verdict itself");
    sub->footer(
        "Prints one JSON line: band, total, per_draw, required_correct, per_draw_floor; with --correct (in place of "
        "--total) also passed, total_correct, meets_total, meets_floor, draws_below_floor (1-based): passed when the "
        "draws' total meets required_correct and no draw is below per_draw_floor. Exit 0 whatever the verdict "
        "(it is `passed`; qualify exits 3 on a band not met).");
    return {sub, [o, total, correct] {
                o->has_total = total->count() > 0, o->has_correct = correct->count() > 0;
                return band_command(*o);
            }};
}

}  // namespace revgraph::cli
