#pragma once
// The backend table: every backend a user can name (`--backend`, Python's backend=, the bench's
// --backend), one row each. Everything that lists, explains, checks or builds a backend reads this
// table — the command's help and errors, `revgraph backends`, the Python package, the benchmarks —
// so adding a backend is one row here plus its own files (docs/architecture.md, "Where to add
// things", "A backend").
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.hpp"

namespace revgraph {

struct BackendRow {
    std::string requested;  // the name asked for: "cpu", "cuda-fused", ...
    std::string reported;   // Backend::name() of what it builds; an alias says what it picks
    bool gpu = false;       // runs on a CUDA device: --device and --pdl/--no-pdl apply
    bool cublaslt = false;  // loads cuBLASLt (libcublasLt) on first use
    bool alias = false;     // picks another row ("auto"): not a backend of its own
    std::string needs;      // what it needs from the build and the machine, in words
    // Why it cannot be built in this process, completing "backend: <name> requested but ...";
    // "" where it can. Touches no GPU state beyond counting devices.
    std::string (*unbuildable)() = nullptr;
    std::unique_ptr<Backend> (*make)() = nullptr;  // call only where unbuildable() is ""
    // A GPU row's launch plan run on the CPU (--emulate: engine/cpu/emulated_backend.hpp), in any
    // build; null for the rest.
    std::unique_ptr<Backend> (*emulate)() = nullptr;
};

const std::vector<BackendRow>& backend_table();                // in the order `revgraph backends` lists them
const BackendRow* find_backend(const std::string& requested);  // nullptr for an unknown name
// The row of a name; Error "backend: unknown backend 'X' (expected ...)" for an unknown one.
const BackendRow& backend_row(const std::string& requested);
std::vector<std::string> backend_names();  // every row's requested name
// The names for help texts and errors: "auto, cpu, cpu-reference, cuda or cuda-fused".
std::string backend_name_list();

// The row's backend; unknown names and rows that cannot be built here throw Error.
std::unique_ptr<Backend> make_backend(const std::string& name);
// The same for a task of this config: an alias ("auto") picks `cpu` where its first pick does not
// run the config's width (a GPU backend at a width other than 82); a named backend is what was
// asked for, and PreparedTask refuses a width it does not run.
std::unique_ptr<Backend> make_backend(const std::string& name, const TaskConfig& config);
// The GPU backend `name`'s launch plan on the CPU (`--emulate`), in any build and on any machine;
// unknown names, `auto` and the CPU backends throw Error in one line, which names the request as
// `what` says it ("--emulate" on the command line, "emulate=True" in Python).
std::unique_ptr<Backend> make_emulated_backend(const std::string& name, const std::string& what = "emulation");
// Throws the one-line refusal PreparedTask would throw where the backend `name` builds for this
// config does not run its width: sweep and qualify call it before they read data or write output.
void require_runs_width(const std::string& name, const TaskConfig& config);

// Whether a backend name can be used in this process, and why not: what `revgraph backends`
// prints, so that a user can see why `auto` chose what it chose. Touches no GPU state beyond
// counting devices (and, where the cuBLASLt path would run, loading cuBLASLt), so GPU options
// can still be set later.
struct BackendAvailability {
    std::string requested;  // the name asked for: "cpu", "cuda-fused", ...
    bool usable = false;
    bool gpu = false;     // the row's own: runs on a CUDA device (false for `auto`, which picks)
    std::string backend;  // Backend::name() of what it builds, e.g. "cuda"
    std::string device;   // Backend::device() where usable
    std::string reason;   // why not, where not usable
    std::string needs;    // the row's needs, usable or not
};
std::vector<BackendAvailability> backend_availability();  // every row, in order

// `revgraph backends --json` (and Python's revgraph.backends()): version, git_commit, and one object
// per name (requested, gpu, usable, backend and device or reason, needs): tools ask `gpu`, never
// the name's spelling, whether a backend runs on a device.
nlohmann::ordered_json backend_availability_json(const std::vector<BackendAvailability>& all);

}  // namespace revgraph
