#pragma once
// The validation report's machine-independent sections (docs/spec.md §8): the CPU numerics and the API/CLI
// smoke test, as `revgraph validate` writes them. The GPU sections are gpu_replay.hpp's.
#include <string>

#include <nlohmann/json.hpp>

namespace revgraph::validate {

// Float64 and float32 trainers at depth 1, 2 and 8: the storing backward against the reconstructing
// one, the core's inverse, and the kept activation bytes (cpu_numerics.hpp), with the tolerances.
nlohmann::ordered_json cpu_numerical_validation();

// docs/spec.md §8's smoke test on `backend` (19 train / 7 query synthetic images, batch 8): two runs of one
// prepared task byte-identical; the CLI, run as `revgraph_path run ...` in a child process, giving the
// very same predictions, parameters, momentum and scores; an archive with query labels refused by the
// API and by the command, which leaves no output; and, where a GPU was initialised, late
// configuration refused. revgraph_path: the revgraph binary (the caller's own path).
nlohmann::ordered_json api_cli_smoke(const std::string& revgraph_path, const std::string& backend);

}  // namespace revgraph::validate
