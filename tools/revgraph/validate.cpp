// revgraph validate: a validation report in the shape of the published learner's
// (shared/seed/validation-report.json) for everything this machine can check; GPU sections are
// marked as not run where there is no GPU.
#include <ctime>
#include <iostream>

#include "engine/backends.hpp"
#include "engine/cuda/device.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/sha256.hpp"
#include "engine/runtime_options.hpp"
#include "engine/validate/gpu_replay.hpp"
#include "engine/validate/smoke.hpp"
#include "engine/version.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {
namespace {

using json = nlohmann::ordered_json;

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

}  // namespace

int validate_command(const std::vector<std::string>& argv, const std::string& self_path) {
    auto options = kTaskOptions;
    options.insert({"output", "replays"});
    auto flags = kTaskFlags;
    flags.insert("quiet");
    const Args args(argv, options, flags);
    if (!args.positional().empty()) throw UsageError{"validate: unexpected argument '" + args.positional()[0] + "'"};
    if (const auto out = args.get("output")) require_distinct_writable_outputs({{"--output", *out}});
    const int replays = args.get("replays") ? static_cast<int>(parse_int("replays", *args.get("replays"), 1, 1000)) : 100;
    configure_runtime(args);
    const std::string backend = args.get("backend").value_or("auto");
    const bool quiet = args.flag("quiet");
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

    say("CPU numerics (float64/float32, depth 1, 2, 8)");
    report["cpu_numerical_validation"] = validate::cpu_numerical_validation();
    say("API/CLI smoke on " + backend);
    report["api_cli_smoke"] = validate::api_cli_smoke(self_path, backend);
    report["api_cli_smoke"]["metadata"]["validation"] = report["cpu_numerical_validation"];

    // Marked {"run": false, "reason": …} where no GPU is usable or CUDA is not built.
    say("GPU replay (depth 1 and 2 step by step; " + std::to_string(replays) + " rev88 replays)");
    // Of the backend asked for when it is a GPU one, else of the default GPU backend.
    const std::string gpu_backend = backend.rfind("cuda", 0) == 0 ? backend : "cuda";
    report["numerical_validation"] = validate::gpu_validation(replays, gpu_backend);

    bool passed = report["cpu_numerical_validation"]["passed"].get<bool>() && report["api_cli_smoke"]["passed"].get<bool>();
    if (report["numerical_validation"]["run"].get<bool>()) passed = passed && report["numerical_validation"]["passed"].get<bool>();
    report["passed"] = passed;
    report["binary_sha256"] = io::sha256_hex(io::read_file(self_path));
    report["finished_at_utc"] = utc_now();
    const std::string text = report.dump(2) + "\n";
    if (const auto out = args.get("output")) io::write_file_atomic(*out, text);
    else write_stdout(text);
    say(passed ? "passed" : "FAILED");
    return passed ? 0 : 1;
}

}  // namespace revgraph::cli
