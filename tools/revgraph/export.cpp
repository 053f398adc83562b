// revgraph export: a configuration as a one-file entry of the group's MNIST-medium time challenge
// (engine/export/entry.hpp; docs/race.md).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "engine/error.hpp"
#include "engine/export/entry.hpp"
#include "engine/io/atomic_file.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

namespace {

struct ExportOptions {
    TaskOptions task;  // --config, --set
    std::optional<std::string> band, from, output;
    bool quiet = false;
};

int export_command(const ExportOptions& o) {
    // A band that is no leaderboard is a mistake on the command line (exit 2), as qualify's is.
    try {
        exporter::require_race_band(*o.band);
    } catch (const Error& e) { throw UsageError{e.what()}; }
    exporter::EntrySource source;
    if (o.from) {
        if (o.task.config || !o.task.set.empty())
            throw UsageError{"export: --from takes its band's config from the file; not with --config or --set"};
        source = exporter::entry_from_bands_file(*o.from, *o.band);
    } else {
        source.band = *o.band;
        source.config = config_from(o.task);
        source.origin = o.task.config ? std::filesystem::path(*o.task.config).filename().string()
                                      : (o.task.set.empty() ? "rev88's config" : "--set");
    }
    const std::string text = exporter::entry_file(source);
    if (o.output) {
        require_distinct_writable_outputs({{"--output", *o.output}},
                                          o.from ? NamedPaths{{"--from", *o.from}} : config_inputs(o.task));
        io::write_file_atomic(*o.output, std::string_view(text));
        if (!o.quiet)
            std::cerr << "revgraph: wrote " << *o.output << " (" << text.size() << " bytes, leaderboard mnist-medium-"
                      << source.band << "pct; check it with tools/race check)\n";
    } else {
        write_stdout(text);
    }
    return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
    auto o = std::make_shared<ExportOptions>();
    CLI::App* sub = app.add_subcommand(
        "export", "write a configuration as a one-file entry of the MNIST-medium time challenge (docs/race.md)");
    sub->add_option("--band", o->band, "the leaderboard: 12, 8, 5, 3 or 2 (% error)")->required()->check(kNonEmpty);
    sub->add_option("--from", o->from,
                    "take the band's config from this file of bands: bench/race.json (chosen on the challenge's own "
                    "draws, with margin) or bench/frontier/frontier.json (chosen on an older protocol's draws); a "
                    "band the file records as failed or unreached is refused")
        ->type_name("FILE")
        ->check(kNonEmpty);
    sub->add_option("--config", o->task.config, "a JSON object of config keys (not with --from)")
        ->type_name("FILE")
        ->check(kNonEmpty);
    sub->add_option("--set", o->task.set, "key=value, after --config (repeatable; not with --from)")->type_name("K=V");
    sub->add_option("--output", o->output, "write the entry here (default: standard output)")
        ->type_name("ENTRY.py")
        ->check(kNonEmpty);
    sub->add_flag("--quiet", o->quiet, "no message on standard error");
    sub->footer(config_keys_help());
    return {sub, [o] { return export_command(*o); }};
}

}  // namespace revgraph::cli
