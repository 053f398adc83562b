#pragma once
// The revgraph subcommands. Each returns the process exit code; errors are thrown as
// revgraph::Error (exit 1) or cli::UsageError (exit 2) and printed as one line by main().
#include <string>
#include <vector>

namespace revgraph::cli {

int run_command(const std::vector<std::string>& args);
int data_command(const std::vector<std::string>& args);
int qualify_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args, const std::string& self_path);
int backends_command(const std::vector<std::string>& args);

}  // namespace revgraph::cli
