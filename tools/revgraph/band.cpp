// revgraph band: the error band's exact numbers (engine/qualify/band.hpp, docs/spec.md §9) for a
// number of query images, as JSON. Why a command: the race harness (tools/race) judges a band with
// the engine's one rule, and on a machine where the built Python package does not import into the
// python3 at hand (a GPU machine's CUDA PyTorch is often another Python version than the build's),
// it asks this binary instead of writing the rule a second time.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "engine/qualify/band.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

namespace {

struct BandOptions {
    std::string band, total, per_draw;  // the counts as given, read by parse_int (one message for any)
};

int band_command(const BandOptions& o) {
    qualify::Band band;
    try {  // a band that is no decimal percentage is a usage error (exit 2), as qualify's is
        band = qualify::Band::parse(o.band, "band: --band");
    } catch (const Error& e) { throw UsageError{e.what()}; }
    const std::int64_t total = parse_int("total", o.total, 0, INT64_MAX);
    const std::int64_t per_draw = parse_int("per-draw", o.per_draw, 0, INT64_MAX);
    nlohmann::ordered_json j;
    j["band"] = band.text();
    j["total"] = total;
    j["per_draw"] = per_draw;
    j["required_correct"] = band.required_correct(total);
    j["per_draw_floor"] = band.per_draw_floor(per_draw);
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
    sub->add_option("--total", o->total, "query images in all (e.g. 110000: 11 draws of 10,000)")->required();
    sub->add_option("--per-draw", o->per_draw, "query images a draw (e.g. 10000)")->required();
    sub->footer("Prints one JSON line: band, total, per_draw, required_correct, per_draw_floor.");
    return {sub, [o] { return band_command(*o); }};
}

}  // namespace revgraph::cli
