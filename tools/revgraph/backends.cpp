// revgraph backends: which backends this build and machine can run, and why not.
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/gpu_verified.hpp"
#include "engine/version.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

namespace {

struct BackendsOptions {
    TaskOptions task;  // only --device is offered here
    bool json = false;
};

int backends_command(const BackendsOptions& o) {
    configure_runtime(o.task);
    const std::vector<BackendAvailability> all = backend_availability();
    std::ostringstream out;
    if (o.json) {
        const nlohmann::ordered_json j = backend_availability_json(all);
        out << j.dump(2) << "\n";
    } else {
        for (const auto& a : all) {
            out << std::left << std::setw(15) << a.requested;
            if (a.usable)
                out << "yes  " << a.backend << " (" << a.device << ")";
            else
                out << "no   " << a.reason;
            out << " [needs " << a.needs << "]\n";
        }
        // What auto builds on this machine, then its rule (which names the verified GPU backends).
        for (const auto& a : all)
            if (a.requested == "auto")
                out << "auto picks " << (a.usable ? a.backend : std::string("nothing"))
                    << " here; its rule: " << find_backend("auto")->reported << "\n";
        // Whether this build's GPU path is the one a passing report measured, said plainly.
        const GpuVerification& v = gpu_verification();
        if (v.backends.empty()) {
            std::string why = v.why;  // the verdict, which may itself begin with the word
            if (why.rfind("unverified: ", 0) == 0) why.erase(0, std::string("unverified: ").size());
            out << "the GPU path of this build is unverified (" << why << ")\n";
        } else {
            out << "the GPU path of this build is verified by " << v.report << " on a " << v.device << "\n";
        }
        out << "every GPU run: " << kGpuResultsIndex << "; how to make one on a GPU machine: " << kGpuCheckGuide
            << "\n";
    }
    write_stdout(out.str());
    return 0;
}

}  // namespace

Command add_backends_command(CLI::App& app) {
    auto o = std::make_shared<BackendsOptions>();
    CLI::App* sub =
        app.add_subcommand("backends", "which backends this build and machine can run (what `auto` picks), or why not");
    sub->add_option("--device", o->task.device, "the CUDA device to ask about")->type_name("N")->check(kNonEmpty);
    sub->add_flag("--json", o->json, "as JSON (version, git_commit, one object per backend)");
    return {sub, [o] { return backends_command(*o); }};
}

}  // namespace revgraph::cli
