// cli_api_run INPUT.npz OUT_DIR [key=value ...]: one task through the engine's API (no command
// line code), written as metadata.json, predictions.npy and state.npz, so that test_cli.py can
// check that `revgraph run` gives the same results as the API.
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npz.hpp"
#include "engine/task_files.hpp"
#include "engine/task.hpp"

int main(int argc, char** argv) {
    using namespace revgraph;
    if (argc < 3) {
        std::fprintf(stderr, "usage: cli_api_run INPUT.npz OUT_DIR [key=value ...]\n");
        return 2;
    }
    try {
        TaskConfig config;
        for (int i = 3; i < argc; ++i) {
            const std::string kv = argv[i];
            const auto eq = kv.find('=');
            if (eq == std::string::npos) throw Error("expected key=value, got '" + kv + "'");
            config.set(kv.substr(0, eq), kv.substr(eq + 1));
        }
        PreparedTask task(read_task_inputs(argv[1]), config, make_backend("auto"));
        task.run();
        const TaskOutputs out = task.outputs();
        const std::filesystem::path dir = argv[2];
        io::write_file_atomic(dir / "metadata.json", out.metadata.dump(2) + "\n");
        io::write_npy(dir / "predictions.npy", predictions_array(out.state.predictions));
        io::write_npz(dir / "state.npz", state_archive(task.layout(), out.state));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cli_api_run: %s\n", e.what());
        return 1;
    }
}
