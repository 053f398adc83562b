// revgraph backends: which backends this build and machine can run, and why not.
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/version.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

int backends_command(const std::vector<std::string>& argv) {
    const Args args(argv, {"device"}, {"json"});
    if (!args.positional().empty()) throw UsageError{"backends: unexpected argument '" + args.positional()[0] + "'"};
    configure_runtime(args);
    const std::vector<BackendAvailability> all = backend_availability();
    std::ostringstream out;
    if (args.flag("json")) {
        nlohmann::ordered_json j;
        j["version"] = version();
        j["git_commit"] = git_commit();
        j["backends"] = nlohmann::ordered_json::array();
        for (const auto& a : all) {
            nlohmann::ordered_json b;
            b["requested"] = a.requested;
            b["usable"] = a.usable;
            if (a.usable) b["backend"] = a.backend, b["device"] = a.device;
            else b["reason"] = a.reason;
            b["needs"] = a.needs;
            j["backends"].push_back(std::move(b));
        }
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
    }
    write_stdout(out.str());
    return 0;
}

}  // namespace revgraph::cli
