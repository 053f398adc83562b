#include "engine/validate/smoke.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/backends.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npz.hpp"
#include "engine/task_files.hpp"
#include "engine/runtime_options.hpp"
#include "engine/task.hpp"
#include "engine/validate/cpu_numerics.hpp"

namespace revgraph::validate {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// Runs the command's executable with `args`, stderr to `err_file`; returns the exit status.
int run_command(const std::string& self, const std::vector<std::string>& args, const fs::path& err_file) {
    std::vector<std::string> all{self};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : all) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw Error("validate: could not start " + self);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string first_line(const fs::path& p) {
    std::ifstream in(p);
    std::string line;
    std::getline(in, line);
    return line;
}

}  // namespace

json cpu_numerical_validation() {
    json checks = json::array();
    bool passed = true;
    for (int depth : {1, 2, 8}) {
        const auto d = check_cpu_numerics<double>(depth);
        const auto f = check_cpu_numerics<float>(depth);
        checks.push_back(d.to_json());
        checks.push_back(f.to_json());
        passed = passed && d.passed && f.passed;
    }
    return json{
        {"passed", passed},
        {"device", "cpu"},
        {"checks", checks},
        {"tolerance", {{"float64", {{"atol", 2e-12}, {"rtol", 2e-10}}}, {"float32", {{"atol", 2e-6}, {"rtol", 3e-3}}}}},
        {"scope",
         "Identical weights (seed 199); the storing backward versus the reconstructing one for the 81 "
         "inputs and every parameter; inverse(core(x)) versus x; kept activation bytes counted from the "
         "buffer the backward is handed. First-order differentiation only."}};
}

json api_cli_smoke(const SmokeCommand& command, const std::string& backend) {
    TaskConfig config;  // rev88 with docs/spec.md §8's smoke sizes
    config.batch_size = 8;
    const auto synthetic = data::synthetic_task(19, 7, 20260914);
    const TaskInputs inputs{synthetic.train_images, synthetic.train_labels, synthetic.test_images};

    PreparedTask task(inputs, config, make_backend(backend));
    task.run();
    const TaskOutputs first = task.outputs();
    task.run();
    const TaskOutputs second = task.outputs();
    const bool repeat_equal = same_outputs(first.state, second.state);

    const fs::path dir = fs::temp_directory_path() / ("revgraph-validate-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    struct Cleanup {
        fs::path d;
        ~Cleanup() {
            std::error_code ec;
            fs::remove_all(d, ec);
        }
    } cleanup{dir};
    io::write_npz(dir / "draw.npz", task_inputs_archive(inputs));
    const int rc = run_command(command.executable,
                               command.arguments({(dir / "draw.npz").string(), backend, config.batch_size,
                                                  (dir / "result.json").string(), (dir / "state.npz").string()}),
                               dir / "run.err");
    bool predictions_equal = false, parameters_equal = false, velocity_equal = false, scores_equal = false;
    if (rc == 0) {
        const auto state = io::read_npz(dir / "state.npz");
        const auto expect = state_archive(task.layout(), first.state);
        parameters_equal = velocity_equal = true;
        for (const auto& [name, array] : expect.entries()) {
            const bool same = state.contains(name) && state.at(name) == array;
            (name.rfind("velocity.", 0) == 0 ? velocity_equal : parameters_equal) &= same;
        }
        predictions_equal = io::read_npy(dir / "result.predictions.npy") == predictions_array(first.state.predictions);
        const auto bytes = io::read_file(dir / "result.json");
        const auto result = nlohmann::json::parse(bytes.begin(), bytes.end());
        scores_equal =
            result.at("scores_sha256").get<std::string>() == first.metadata.at("scores_sha256").get<std::string>();
    }

    // An archive carrying query labels must be refused, by the API and by the command, and
    // the command must leave no output behind.
    auto with_labels = task_inputs_archive(inputs);
    with_labels.add("test_labels", predictions_array(synthetic.test_labels));
    io::write_npz(dir / "labelled.npz", with_labels);
    bool api_rejected = false;
    try {
        (void)read_task_inputs(dir / "labelled.npz");
    } catch (const Error&) { api_rejected = true; }
    const int rc_labels =
        run_command(command.executable,
                    command.arguments({(dir / "labelled.npz").string(), "", 0, (dir / "labelled.json").string(), ""}),
                    dir / "labelled.err");
    const bool cli_rejected = rc_labels == 1 && !fs::exists(dir / "labelled.json") &&
                              first_line(dir / "labelled.err").find("test_labels") != std::string::npos;

    // Configuration that must precede GPU initialisation: only checkable where a GPU ran.
    json late;
    if (Runtime::initialized()) {
        RuntimeOptions other = Runtime::options();
        other.cublaslt_workspace_bytes += 1 << 20;
        bool rejected = false;
        try {
            Runtime::configure(other);
        } catch (const Error&) { rejected = true; }
        late = rejected;
    } else {
        late = "not run: no GPU was initialised by this process";
    }

    json metadata = first.metadata;
    const bool passed = rc == 0 && repeat_equal && predictions_equal && parameters_equal && velocity_equal &&
                        scores_equal && api_rejected && cli_rejected && (late.is_string() || late.get<bool>());
    return json{{"passed", passed},
                {"backend", task.backend().name()},
                {"train_examples", 19},
                {"query_examples", 7},
                {"batch_sizes", {8, 8, 3}},
                {"cli_exit_code", rc},
                {"predictions_equal", predictions_equal},
                {"final_parameters_equal", parameters_equal},
                {"final_velocity_equal", velocity_equal},
                {"scores_equal", scores_equal},
                {"repeated_api_replay_byte_equal", repeat_equal},
                {"query_label_archive_rejected", api_rejected && cli_rejected},
                {"late_cuda_initialization_rejected", late},
                {"config", config.to_json()},
                {"metadata", metadata}};
}

}  // namespace revgraph::validate
