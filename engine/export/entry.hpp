#pragma once
// `revgraph export`: a configuration as the one Python file the group's MNIST-medium time challenge
// takes as an entry (docs/race.md). Its kernels are engine/cuda/fused_any/'s, generated from the
// engine's sources (entry_sources.hpp), so what it trains is what cuda-fused and the float32 CPU
// trainer train, bit for bit.
#include <string>
#include <vector>

#include "engine/config.hpp"

namespace revgraph::exporter {

// The challenge's rules on an entry's text that the export must meet (the local harness checks
// every rule: tools/race check).
inline constexpr std::size_t kMaxEntryBytes = 20480;
inline constexpr std::size_t kMaxLiteralChars = 4096;
// Throws revgraph::Error in one line naming the leaderboards (qualify::leaderboard_bands, the one
// list) unless `band` is one of them.
void require_race_band(const std::string& band);

struct EntrySource {
    std::string band;  // "12": the leaderboard mnist-medium-12pct
    TaskConfig config;
    std::string origin;  // where the config came from, in words ("bench/race.json, band 12")
    // Where the file of bands records this band as failed ("band 3 of F did not qualify there
    // (105723 of 110000 correct, 106700 required)"), else "": entry_file refuses such a band, while
    // a judge of its config on the CPU (tools/race engine) may still read it.
    std::string recorded_failure;
};

// The entry's whole text. Throws revgraph::Error in one line where the band is not a leaderboard,
// the config is out of range, the source records the band as failed, or the file would break a
// rule above (naming the size).
std::string entry_file(const EntrySource& source);

// The entry of `band` in a JSON file of bands — bench/race.json or bench/frontier/frontier.json:
// {"bands": [{"band": "12", "config": {...}}, ...]}. Throws in one line where the file has none
// or records the band as "unreached"; a band recorded as failed (frontier.json's "qualified":
// false, race.json's "verify": {"passed": false}) comes back with its recorded_failure.
EntrySource entry_from_bands_file(const std::string& path, const std::string& band);

}  // namespace revgraph::exporter
