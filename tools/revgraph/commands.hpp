#pragma once
// The revgraph subcommands. Each add_* registers its options on a CLI11 subcommand of `app` and
// returns what to call once that subcommand was parsed; the call returns the process exit code.
// Errors are thrown as revgraph::Error (exit 1) or cli::UsageError (exit 2) and printed as one
// line by main().
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace revgraph::cli {

struct Command {
    CLI::App* app;             // the subcommand (for `data`, the leaf: `data mnist`, `data embedded`)
    std::function<int()> run;  // runs it with what the parse filled in
};

Command add_run_command(CLI::App& app);
std::vector<Command> add_data_commands(CLI::App& app);
Command add_qualify_command(CLI::App& app);
Command add_verify_command(CLI::App& app);
Command add_validate_command(CLI::App& app, const std::string& self_path);
Command add_backends_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_band_command(CLI::App& app);
// `sweep` and `sweep merge` (tools/revgraph/sweep.cpp), merge first.
std::vector<Command> add_sweep_commands(CLI::App& app);

}  // namespace revgraph::cli
