#include "engine/task.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <set>
#include <system_error>
#include <thread>

#include "engine/error.hpp"
#include "engine/timing.hpp"
#include "engine/io/sha256.hpp"
#include "engine/parallel_for.hpp"
#include "engine/rng/pcg64.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/stats.hpp"
#include "engine/utc_time.hpp"
#include "engine/version.hpp"

namespace revgraph {
namespace {

const TaskConfig& validated(const TaskConfig& config) {
    config.validate();
    return config;
}

}  // namespace

PreparedInputs prepare_inputs(const TaskInputs& inputs, const TaskConfig& config) {
    PreparedInputs p;
    p.inputs = &inputs;
    p.config = config;
    const model::Layout layout(config.depth, config.width);
    p.initial_parameters.resize(layout.total());
    rng::init_parameters(layout, config.seed, p.initial_parameters.data());
    p.permutations = rng::EpochOrders(config.seed, inputs.train_count(), config.epochs);
    return p;
}

nlohmann::ordered_json parameter_hashes(const model::Layout& layout, const std::vector<float>& flat) {
    if (flat.size() != layout.total()) throw Error("task: parameter buffer has the wrong size");
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& v : layout.views()) j[v.name] = io::sha256_hex(flat.data() + v.offset, v.size() * sizeof(float));
    return j;
}

namespace {

nlohmann::ordered_json hash_inputs(const TaskInputs& inputs) {
    nlohmann::ordered_json h;
    h["train_images"] = io::sha256_hex(inputs.train_images);
    h["train_labels"] = io::sha256_hex(inputs.train_labels);
    h["test_images"] = io::sha256_hex(inputs.test_images);
    return h;
}

}  // namespace

HashedInputs::HashedInputs(TaskInputs inputs) : inputs_(std::move(inputs)) {
    inputs_.validate();
    hashes_ = hash_inputs(inputs_);
}

PreparedTask::PreparedTask(TaskInputs inputs, const TaskConfig& config, std::unique_ptr<Backend> backend)
    : PreparedTask(std::move(inputs), nullptr, config, std::move(backend)) {}

PreparedTask::PreparedTask(const HashedInputs& inputs, const TaskConfig& config, std::unique_ptr<Backend> backend)
    : PreparedTask(inputs.inputs(), &inputs.hashes(), config, std::move(backend)) {}

PreparedTask::PreparedTask(TaskInputs inputs, const nlohmann::ordered_json* known_hashes, const TaskConfig& config,
                           std::unique_ptr<Backend> backend)
    : inputs_(std::move(inputs)),
      config_(validated(config)),
      layout_(config.depth, config.width),
      backend_(std::move(backend)) {
    const auto start = Clock::now();
    if (!backend_) throw Error("task: no backend");
    if (const std::string why = width_refusal(*backend_, config_.width); !why.empty()) throw Error(why);
    if (known_hashes) {
        input_hashes_ = *known_hashes;  // HashedInputs validated and hashed these very inputs
    } else {
        inputs_.validate();
        input_hashes_ = hash_inputs(inputs_);
    }

    prepared_ = prepare_inputs(inputs_, config_);
    backend_->prepare(prepared_);
    preparation_seconds_ = seconds_since(start);
}

void PreparedTask::run(const Backend::EpochHook& after_epoch) {
    const auto start = Clock::now();
    try {
        backend_->run(config_.epochs, after_epoch);
    } catch (...) {
        // Stopped part way (the hook, a failed launch): nothing it enqueued may outlive the error,
        // which may free the task. A second failure here says less than the first: that one goes on.
        try {
            backend_->synchronize();
        } catch (...) {}
        throw;
    }
    backend_->synchronize();
    const double wall = seconds_since(start);
    last_run_seconds_ = backend_->last_run_device_seconds().value_or(wall);
    last_run_group_size_ = 1;
    ++run_count_;
}

namespace {

// run_together's units of work: one task, or a launch group (Backend::launch_group) of several, in
// the order of their first members.
using Unit = std::vector<PreparedTask*>;

std::vector<Unit> launch_units(const std::vector<PreparedTask*>& tasks) {
    std::vector<Unit> units;
    std::vector<std::string> keys;  // units[i]'s group, "" for a task alone
    for (PreparedTask* t : tasks) {
        const std::string key = t->backend().launch_group();
        const auto same = key.empty() ? keys.end() : std::find(keys.begin(), keys.end(), key);
        if (same != keys.end()) {
            units[static_cast<std::size_t>(same - keys.begin())].push_back(t);
        } else {
            units.push_back({t});
            keys.push_back(key);
        }
    }
    return units;
}

}  // namespace

void PreparedTask::run_unit(const std::vector<PreparedTask*>& unit, const Backend::EpochHook& after_epoch) {
    if (unit.size() == 1) {
        unit[0]->backend_->run(unit[0]->config_.epochs, after_epoch);
        return;
    }
    std::vector<Backend*> members;
    for (PreparedTask* t : unit) members.push_back(t->backend_.get());
    unit[0]->backend_->run_group(members);
}

double PreparedTask::run_together(const std::vector<PreparedTask*>& tasks, unsigned threads,
                                  const Backend::EpochHook& after_epoch) {
    if (std::find(tasks.begin(), tasks.end(), nullptr) != tasks.end())
        throw Error("task: run_together() of a null task");
    if (std::set<PreparedTask*>(tasks.begin(), tasks.end()).size() != tasks.size())
        throw Error("task: run_together() of a task listed twice (it would race with itself)");
    std::vector<Unit> queued, threaded;
    for (Unit& u : launch_units(tasks)) (u[0]->backend_->asynchronous() ? queued : threaded).push_back(std::move(u));
    std::vector<double> wall(threaded.size(), 0.0);
    std::vector<std::exception_ptr> errors(threaded.size());

    const auto start = Clock::now();
    // Enqueue every asynchronous unit first: none waits for another, so they overlap.
    std::exception_ptr first_error;
    std::size_t launched = 0;
    try {
        for (; launched < queued.size(); ++launched) run_unit(queued[launched], after_epoch);
    } catch (...) {
        first_error = std::current_exception();
        ++launched;  // the failed one may have enqueued part of its work: wait for it too
    }
    if (!first_error) {
        // The synchronous ones: workers take the next unit in list order until none is left.
        if (threads == 0) threads = usable_cpus();  // as sweep --jobs: the CPUs this process may use
        const std::size_t workers = std::min<std::size_t>(threads, threaded.size());
        std::atomic<std::size_t> next{0};
        std::atomic<bool> failed{false};  // once one unit fails, none starts: the call throws anyway
        const auto work = [&] {
            for (std::size_t k = next++; k < threaded.size() && !failed; k = next++) {
                try {
                    const auto t0 = Clock::now();
                    run_unit(threaded[k], after_epoch);
                    for (PreparedTask* t : threaded[k]) t->backend_->synchronize();
                    wall[k] = seconds_since(t0);
                } catch (...) {
                    errors[k] = std::current_exception();
                    failed = true;
                }
            }
        };
        std::vector<std::jthread> pool;  // joined on the way out, also when one fails to start
        for (std::size_t w = 1; w < workers; ++w) {
            try {
                pool.emplace_back(work);
            } catch (const std::system_error&) {
                break;  // fewer workers: the same results, a little later
            }
        }
        if (workers > 0) work();  // the calling thread is a worker too
    }
    for (std::size_t k = 0; k < launched; ++k) {
        for (PreparedTask* t : queued[k]) {
            try {
                t->backend_->synchronize();
            } catch (...) {
                if (!first_error) first_error = std::current_exception();
            }
        }
    }
    const double total = seconds_since(start);
    for (const auto& e : errors)
        if (e && !first_error) first_error = e;
    if (first_error) std::rethrow_exception(first_error);

    for (const Unit& u : queued)
        for (PreparedTask* t : u) {
            t->last_run_seconds_ = t->backend_->last_run_device_seconds().value_or(total);
            t->last_run_group_size_ = static_cast<int>(u.size());
            ++t->run_count_;
        }
    // A group's members share its thread's wall time: each waited for all (the device times say more).
    for (std::size_t k = 0; k < threaded.size(); ++k)
        for (PreparedTask* t : threaded[k]) {
            t->last_run_seconds_ = t->backend_->last_run_device_seconds().value_or(wall[k]);
            t->last_run_group_size_ = static_cast<int>(threaded[k].size());
            ++t->run_count_;
        }
    return total;
}

std::int64_t non_finite_score_rows(const std::vector<float>& scores) {
    constexpr std::size_t k = model::kClasses;  // a row's scores
    std::int64_t rows = 0;
    for (std::size_t r = 0; r + k <= scores.size(); r += k)
        rows += std::any_of(scores.begin() + r, scores.begin() + r + k, [](float v) { return !std::isfinite(v); });
    return rows;
}

std::string divergence_warning(std::int64_t non_finite_rows, std::int64_t query_rows) {
    if (non_finite_rows == 0) return {};
    return std::to_string(non_finite_rows) + " of " + std::to_string(query_rows) +
           " query rows scored NaN or infinity: the run diverged, and their predictions mean nothing "
           "(a smaller learning_rate, alpha or weight_decay may help)";
}

TaskOutputs PreparedTask::outputs(const std::vector<double>& run_seconds) {
    if (run_count_ == 0) throw Error("task: outputs() before run()");
    TaskOutputs out;
    out.state = backend_->read_state();
    auto& m = out.metadata;
    m["config"] = config_.to_json();
    m["parameter_count"] = layout_.total();
    m["train_count"] = inputs_.train_count();
    m["test_count"] = inputs_.test_count();
    m["input_hashes"] = input_hashes_;
    m["epoch_permutation_sha256"] = nlohmann::ordered_json::array();
    // Drawn again one at a time (the backend's copy drew them for training): no epoch is kept.
    rng::EpochOrders orders = prepared_.permutations;
    for (std::size_t e = 0; e < orders.size(); ++e) m["epoch_permutation_sha256"].push_back(io::sha256_hex(orders[e]));
    m["initial_parameter_sha256"] = parameter_hashes(layout_, prepared_.initial_parameters);
    m["final_parameter_sha256"] = parameter_hashes(layout_, out.state.parameters);
    m["final_velocity_sha256"] = parameter_hashes(layout_, out.state.velocity);
    m["state_vector_sha256"] = io::sha256_hex(out.state.parameters);
    m["predictions_sha256"] = io::sha256_hex(out.state.predictions);
    m["scores_sha256"] = io::sha256_hex(out.state.scores);
    m["non_finite_score_rows"] = non_finite_score_rows(out.state.scores);
    m["preparation_seconds"] = preparation_seconds_;
    const std::vector<double> runs = run_seconds.empty() ? std::vector<double>{last_run_seconds_} : run_seconds;
    m["training_prediction_seconds"] = runs.size() == 1 ? runs[0] : median(runs);
    m["training_prediction_seconds_statistic"] = runs.size() == 1 ? "single run" : "median";
    m["run_count"] = run_count_;
    m["retained_core_states"] = backend_->retained_core_states();
    const std::int64_t full_batch = std::min<std::int64_t>(config_.batch_size, inputs_.train_count());
    m["core_saved_bytes_per_example"] = backend_->retained_core_bytes() / static_cast<std::size_t>(full_batch);
    m["device"] = backend_->device();
    m["backend"] = backend_->name();
    // Which build made these outputs, and when: a result file must say where it came from.
    m["revgraph_version"] = version();
    m["git_commit"] = git_commit();
    m["created_utc"] = utc_timestamp();
    m["run_seconds"] = runs;  // last: a list, and with the times above what two replays differ in
    return out;
}

}  // namespace revgraph
