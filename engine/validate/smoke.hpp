#pragma once
// The validation report's machine-independent sections (docs/spec.md §8): the CPU numerics and the API/CLI
// smoke test, as `revgraph validate` writes them. The GPU sections are gpu_replay.hpp's.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace revgraph::validate {

// Float64 and float32 trainers at depth 1, 2 and 8: the storing backward against the reconstructing
// one, the core's inverse, and the kept activation bytes (cpu_numerics.hpp), with the tolerances.
nlohmann::ordered_json cpu_numerical_validation();

// One run of the command, as the smoke asks for it: the command's own flags are the caller's
// (tools/revgraph), so the engine never spells them.
struct SmokeRun {
    std::string input;    // the task archive (.npz)
    std::string backend;  // "" for the command's default
    int batch_size = 0;   // 0 for the command's default
    std::string result;   // RESULT.json, with its <stem>.predictions.npy beside it
    std::string state;    // the final state archive, "" for none
};
// The command that runs: its executable, and the arguments (without argv[0]) of one run.
struct SmokeCommand {
    std::string executable;
    std::function<std::vector<std::string>(const SmokeRun&)> arguments;
};

// docs/spec.md §8's smoke test on `backend` (19 train / 7 query synthetic images, batch 8): two runs of one
// prepared task byte-identical; the command, run in a child process, giving the very same predictions,
// parameters, momentum and scores; an archive with query labels refused by the API and by the command,
// which leaves no output; and, where a GPU was initialised, late configuration refused.
nlohmann::ordered_json api_cli_smoke(const SmokeCommand& command, const std::string& backend);

}  // namespace revgraph::validate
