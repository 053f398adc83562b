// revgraph validate: a validation report in the shape of the published learner's
// (test/vectors/validation-report.json; its keys in docs/results.md) for everything this machine can check; GPU
// sections are marked as not run where there is no GPU.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cuda/device.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/sha256.hpp"
#include "engine/runtime_options.hpp"
#include "engine/validate/gpu_replay.hpp"
#include "engine/utc_time.hpp"
#include "engine/validate/smoke.hpp"
#include "engine/version.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

using json = nlohmann::ordered_json;

namespace {

struct ValidateOptions {
    TaskOptions task;
    std::optional<std::string> output, replays;
    bool quiet = false;
};

// The smoke's end-to-end run is this command's `run`, spelled here where its flags live.
std::vector<std::string> smoke_run_arguments(const validate::SmokeRun& r) {
    std::vector<std::string> a{"run", "--input", r.input};
    if (r.batch_size > 0) a.insert(a.end(), {"--set", "batch_size=" + std::to_string(r.batch_size)});
    if (!r.backend.empty()) a.insert(a.end(), {"--backend", r.backend});
    a.insert(a.end(), {"--output", r.result});
    if (!r.state.empty()) a.insert(a.end(), {"--state", r.state});
    a.push_back("--quiet");
    return a;
}

int validate_command(const ValidateOptions& o, const std::string& self_path) {
    if (const auto& out = o.output) require_distinct_writable_outputs({{"--output", *out}}, {});
    const int replays = o.replays ? static_cast<int>(parse_int("replays", *o.replays, 1, 1000)) : 100;
    const std::string backend = o.task.backend;
    if (!backend.empty()) backend_row(backend);  // an unknown name is refused before any check runs
    // GPU options are not refused with a CPU --backend here: the GPU replay check runs on a GPU
    // backend whatever --backend names (cuda where that is a CPU one), with --device and the workspace.
    configure_runtime(o.task);
    const bool quiet = o.quiet;
    const auto say = [&](const std::string& s) {
        if (!quiet) std::cerr << "revgraph: validate: " << s << "\n";
    };

    json report;
    report["passed"] = false;
    report["finished_at_utc"] = nullptr;
    report["git_commit"] = git_commit();
    report["revgraph_version"] = version();
    report["gpu"] = cuda::device_count() > 0 ? json(cuda::describe_device()) : json(nullptr);
    report["workspace_bytes"] = Runtime::options().cublaslt_workspace_bytes;

    // Each step's line says what it found once it ran; a step not run says so, never "passed".
    const auto verdict = [](const json& section) { return section["passed"].get<bool>() ? "passed" : "FAILED"; };
    report["cpu_numerical_validation"] = validate::cpu_numerical_validation();
    say("CPU numerics (float64/float32, depth 1, 2, 8): " + std::string(verdict(report["cpu_numerical_validation"])));
    report["api_cli_smoke"] = validate::api_cli_smoke({self_path, smoke_run_arguments}, backend);
    report["api_cli_smoke"]["metadata"]["validation"] = report["cpu_numerical_validation"];
    say("API/CLI smoke on " + report["api_cli_smoke"]["backend"].get<std::string>() + ": " +
        verdict(report["api_cli_smoke"]));

    // Marked {"run": false, "reason": …} where no GPU is usable or CUDA is not built.
    // Of the backend asked for when it is a GPU one, else of the default GPU backend.
    const std::string gpu_backend = !backend.empty() && backend_row(backend).gpu ? backend : "cuda";
    report["numerical_validation"] = validate::gpu_validation(replays, gpu_backend);
    const bool gpu_ran = report["numerical_validation"]["run"].get<bool>();
    const std::string gpu_step =
        "GPU replay (depth 1 and 2 step by step; " + std::to_string(replays) + " rev88 replays)";
    if (gpu_ran)
        say(gpu_step + ": " + verdict(report["numerical_validation"]));
    else
        say(gpu_step + ": NOT RUN (" + report["numerical_validation"]["reason"].get<std::string>() + ")");

    bool passed =
        report["cpu_numerical_validation"]["passed"].get<bool>() && report["api_cli_smoke"]["passed"].get<bool>();
    if (gpu_ran) passed = passed && report["numerical_validation"]["passed"].get<bool>();
    report["passed"] = passed;
    report["binary_sha256"] = io::sha256_hex(io::read_file(self_path));
    report["finished_at_utc"] = utc_timestamp();
    const std::string text = report.dump(2) + "\n";
    if (const auto& out = o.output)
        io::write_file_atomic(*out, text);
    else
        write_stdout(text);
    say(!passed ? "FAILED" : gpu_ran ? "passed" : "passed on the CPU only; the GPU replay was not run");
    return passed ? 0 : 1;
}

}  // namespace

Command add_validate_command(CLI::App& app, const std::string& self_path) {
    auto o = std::make_shared<ValidateOptions>();
    CLI::App* sub = app.add_subcommand("validate",
                                       "write a validation report: CPU numerics, API/CLI smoke, and the "
                                       "GPU replay where a GPU is usable (marked not run elsewhere)");
    sub->add_option("--output", o->output, "the report (else to stdout)")->type_name("REPORT.json")->check(kNonEmpty);
    sub->add_option("--replays", o->replays, "rev88 replays of the GPU check (default 100)")
        ->type_name("N")
        ->check(kNonEmpty);
    // No --config or --set: every check runs shapes of its own (docs/spec.md §8), and a setting
    // taken and then not used would pass for one that had been validated.
    add_task_options(*sub, o->task, false);
    sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
    return {sub, [o, self_path] { return validate_command(*o, self_path); }};
}

}  // namespace revgraph::cli
