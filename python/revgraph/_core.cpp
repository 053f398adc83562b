// revgraph._core: the engine's PreparedTask for Python. revgraph/_api.py names these few entry
// points for users; everything that computes lives in the engine, so Python gets the CLI's bytes.
// Errors: a wrong type is TypeError; what the caller got wrong in value (inputs, config, an unknown
// backend name, an option out of range) is ValueError with the engine's message; anything that
// fails once those are known good (a backend that cannot be built, the device) is RuntimeError,
// through the one translator registered with the module.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/config_from.hpp"
#include "engine/data/draws.hpp"
#include "engine/export/entry.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/io/npy.hpp"
#include "engine/task_files.hpp"
#include "engine/qualify/band.hpp"
#include "engine/qualify/protocol.hpp"
#include "engine/qualify/qualification.hpp"
#include "engine/qualify/training_set.hpp"
#include "engine/qualify/verify.hpp"
#include "engine/runtime_options.hpp"
#include "engine/task.hpp"
#include "engine/version.hpp"

namespace py = pybind11;

namespace revgraph::python {
namespace {

using Clock = std::chrono::steady_clock;

// _core.SetSyntaxError, a ValueError subclass, created with the module (whose attribute keeps it
// alive: a raw pointer here, so nothing is released after the interpreter is gone).
PyObject* set_syntax_error = nullptr;
// _core.SameFileError, a ValueError subclass likewise: an output that is an input or another output.
PyObject* same_file_error = nullptr;

// The caller's mistake: Python's ValueError, message as the CLI prints it after "revgraph: error: ".
[[noreturn]] void bad(const std::string& message) { throw py::value_error(message); }

std::string dtype_str(const py::array& a) { return py::str(a.dtype().attr("str")).cast<std::string>(); }

// A numpy array as the engine's one input check (check_input_arrays) sees it. Anything else is
// the wrong type: TypeError.
InputArray described(const py::object& obj, const char* name) {
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string("input: ") + name + " must be a numpy array, got " +
                             py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
    const auto a = py::reinterpret_borrow<py::array>(obj);
    return InputArray{dtype_str(a), std::vector<std::int64_t>(a.shape(), a.shape() + a.ndim()),
                      (a.flags() & py::array::c_style) != 0, a.attr("flags").attr("aligned").cast<bool>()};
}

// What keeps the caller's arrays alive while the engine reads them in place. It may be dropped
// without the GIL (a task that fails to prepare unwinds in a GIL-free section), so it takes the
// GIL to release its references.
struct ArrayOwner {
    py::array train, labels, test;
};

std::shared_ptr<const void> own(py::array train, py::array labels, py::array test) {
    return std::shared_ptr<const ArrayOwner>(new ArrayOwner{std::move(train), std::move(labels), std::move(test)},
                                             [](const ArrayOwner* o) {
                                                 py::gil_scoped_acquire gil;
                                                 delete o;
                                             });
}

template <typename T>
std::span<const T> span_of(const py::array& a) {
    return {static_cast<const T*>(a.data()), static_cast<std::size_t>(a.size())};
}

TaskInputs task_inputs(const py::object& train_images, const py::object& train_labels, const py::object& test_images) {
    const InputArray d_train = described(train_images, "train_images");
    const InputArray d_labels = described(train_labels, "train_labels");
    const InputArray d_test = described(test_images, "test_images");
    try {
        check_input_arrays(d_train, d_labels, d_test);
    } catch (const Error& e) { bad(e.what()); }
    const auto train = py::reinterpret_borrow<py::array>(train_images);
    const auto labels = py::reinterpret_borrow<py::array>(train_labels);
    const auto test = py::reinterpret_borrow<py::array>(test_images);
    // Used in place, never copied: the task holds references to the arrays themselves.
    return TaskInputs::borrow(span_of<float>(train), span_of<std::int64_t>(labels), span_of<float>(test),
                              own(train, labels, test));
}

// A Python int as a JSON integer, as a config file would hold it. Past 64 bits it is exact and
// still too large for an integer key (seed, depth, ...: out of range), while a real-valued key takes
// it as the double --config and --set read the same digits as (learning_rate=10**30 is 1e30).
nlohmann::json json_integer(const std::string& key, const py::handle& value) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) return v;
    if (overflow > 0) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
        if (!PyErr_Occurred()) return u;
        PyErr_Clear();
    }
    const auto& keys = TaskConfig::keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) return nullptr;  // the reader names it
    if (!TaskConfig::integer_key(key)) {
        const double d = PyLong_AsDouble(value.ptr());
        if (!PyErr_Occurred()) return d;
        PyErr_Clear();
    }
    bad("config: " + key + " is out of range: " + py::str(value).cast<std::string>());
}

// Keyword arguments to a TaskConfig through the engine's JSON reader, so the rules and messages
// are those of --config (an unknown key, a float for depth, a bool anywhere: ValueError).
TaskConfig task_config(const py::dict& config) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : config) {
        const std::string key = py::str(k).cast<std::string>();
        if (PyBool_Check(v.ptr()))
            j[key] = v.cast<bool>();
        else if (PyLong_Check(v.ptr()))
            j[key] = json_integer(key, v);
        else if (PyFloat_Check(v.ptr()))
            j[key] = v.cast<double>();
        else if (py::isinstance<py::str>(v))
            j[key] = v.cast<std::string>();
        else
            j[key] = nullptr;  // the reader says what type the key needs
    }
    TaskConfig c;
    try {
        c.update_from_json(j);
        c.validate();
    } catch (const Error& e) { bad(e.what()); }
    return c;
}

// Unknown names are the caller's mistake; a known backend this machine cannot run is not.
std::unique_ptr<Backend> backend_named(const std::string& name, const TaskConfig& config = TaskConfig()) {
    try {
        return make_backend(name, config);
    } catch (const Error& e) {
        if (!find_backend(name)) bad(e.what());
        throw;  // a known backend this machine cannot build: RuntimeError
    }
}

py::object json_to_python(const nlohmann::ordered_json& j) {
    return py::module_::import("json").attr("loads")(j.dump());
}

py::array read_only(py::array a) {
    a.attr("setflags")(py::arg("write") = false);
    return a;
}

// One run's results, owned here so that numpy arrays view them without a copy.
class RunOutput {
public:
    RunOutput(TaskOutputs outputs, model::Layout layout, double run_seconds, double outputs_seconds)
        : out_(std::move(outputs)),
          layout_(std::move(layout)),
          run_seconds_(run_seconds),
          outputs_seconds_(outputs_seconds) {}

    // Read-only views: the run's own bytes, which its metadata hashes and predictions_npy() writes;
    // a caller who wants to change them takes a copy.
    py::array predictions(py::object self) const {
        const auto& p = out_.state.predictions;
        return read_only(py::array_t<std::int64_t>({static_cast<py::ssize_t>(p.size())}, p.data(), self));
    }
    py::array scores(py::object self) const {
        const auto& s = out_.state.scores;
        return read_only(
            py::array_t<float>({static_cast<py::ssize_t>(s.size() / 10), py::ssize_t(10)}, s.data(), self));
    }
    // Every parameter by name, then velocity.<name>, as `--state` writes them.
    py::dict state() const {
        py::dict d;
        const io::NpzArchive archive = state_archive(layout_, out_.state);
        for (const auto& [name, array] : archive.entries()) {
            py::array_t<float> a(std::vector<py::ssize_t>(array.shape.begin(), array.shape.end()));
            std::memcpy(a.mutable_data(), array.data.data(), array.data.size());
            d[py::str(name)] = a;
        }
        return d;
    }
    bool has_metadata() const { return !out_.metadata.is_null(); }
    std::string metadata_json() const { return out_.metadata.dump(); }
    py::bytes predictions_npy() const {
        const auto bytes = io::serialize_npy(predictions_array(out_.state.predictions));
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    double run_seconds() const { return run_seconds_; }
    double outputs_seconds() const { return outputs_seconds_; }
    std::string divergence_warning() const {
        return revgraph::divergence_warning(non_finite_score_rows(out_.state.scores),
                                            static_cast<std::int64_t>(out_.state.predictions.size()));
    }

private:
    TaskOutputs out_;
    model::Layout layout_;
    double run_seconds_;
    double outputs_seconds_;
};

// Ctrl-C in a long run. A run holds no GIL, so Python's signal handlers wait for it to end (a wrong
// epochs=100000 is minutes). So while a run called from Python's main thread (the only one that
// runs handlers) goes on, that thread lets them run every 100 ms, and a handler that raises
// (KeyboardInterrupt) stops the run at its next epoch; the handler's exception reaches the caller.
// The Task stays usable: run() starts from the seed. From any other thread a run is as before.
class Interruptible {
public:
    Interruptible()  // with the GIL
        : main_thread_(py::module_::import("threading")
                           .attr("main_thread")()
                           .is(py::module_::import("threading").attr("current_thread")())),
          last_(Clock::now()) {}

    // run(hook) on this thread, which looks for signals after an epoch, once 100 ms have passed
    // since the last look: a run shorter than that never takes the GIL and its time is untouched.
    template <class Run>
    void on_this_thread(Run&& run) {
        try {
            run([this](int) {
                if (main_thread_ && Clock::now() - last_ >= kEvery) look();
                if (stopped_) throw Stopped();
            });
        } catch (...) {
            if (error_) throw *error_;  // what the handler raised, not the Stopped it caused
            throw;
        }
    }

    // run(hook) on a thread of its own while this one looks every 100 ms: for run_together, whose
    // workers may leave this thread nothing to run (and so nowhere to look) while they go on.
    template <class Run>
    void beside_this_thread(Run&& run) {
        const auto hook = [this](int) {
            if (stopped_) throw Stopped();
        };
        if (!main_thread_) return run(hook);
        std::exception_ptr failure;
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        std::jthread worker;
        try {
            worker = std::jthread([&] {
                try {
                    run(hook);
                } catch (...) { failure = std::current_exception(); }
                const std::lock_guard<std::mutex> lock(m);
                done = true;
                cv.notify_one();
            });
        } catch (const std::system_error&) {
            return run(hook);  // no thread to spare: as from any other thread
        }
        {
            std::unique_lock<std::mutex> lock(m);
            while (!cv.wait_for(lock, kEvery, [&] { return done; }))
                if (!stopped_) {
                    lock.unlock();
                    look();
                    lock.lock();
                }
        }
        worker.join();
        if (error_) throw *error_;
        if (failure) std::rethrow_exception(failure);
    }

private:
    struct Stopped : std::exception {
        const char* what() const noexcept override { return "stopped by a Python signal handler"; }
    };
    static constexpr auto kEvery = std::chrono::milliseconds(100);

    void look() {  // on the main thread, without the GIL
        {
            py::gil_scoped_acquire gil;
            if (PyErr_CheckSignals() != 0) error_.emplace();  // takes the exception out of the interpreter
        }
        if (error_) stopped_ = true;  // after error_ is written: a worker that sees it stopped finds it
        last_ = Clock::now();
    }

    const bool main_thread_;
    Clock::time_point last_;  // the main thread's alone
    std::atomic<bool> stopped_{false};
    std::optional<py::error_already_set> error_;
};

// A PreparedTask plus a lock: two Python threads calling run() on one task take turns (the
// backend's buffers are one per task), while different tasks run in parallel without the GIL.
class Task {
public:
    Task(const py::object& train_images, const py::object& train_labels, const py::object& test_images,
         const std::string& backend, const py::dict& config, bool emulate) {
        TaskInputs inputs = task_inputs(train_images, train_labels, test_images);
        const TaskConfig c = task_config(config);
        py::gil_scoped_release nogil;
        try {
            inputs.validate();  // here, so that bad values are ValueError and not a device failure
        } catch (const Error& e) { bad(e.what()); }
        std::unique_ptr<Backend> b;
        if (emulate) {  // the GPU backend's launch plan on the CPU: naming a CPU backend is a bad value
            try {
                b = make_emulated_backend(backend, "emulate=True");
            } catch (const Error& e) { bad(e.what()); }
        } else {
            b = backend_named(backend, c);
        }
        // A width the backend does not run is a bad value for it (ValueError), as a bad config is.
        if (const std::string why = width_refusal(*b, c.width); !why.empty()) bad(why);
        task_ = std::make_unique<PreparedTask>(std::move(inputs), c, std::move(b));
    }

    // Freed without the GIL (pybind11 deallocates with it held): a GPU task's teardown waits for its
    // streams and frees device memory, which may wait for the whole device, and Python's other
    // threads (a pool of fit_predict calls, each dropping its task) go on meanwhile. The inputs'
    // owners take the GIL back themselves (ArrayOwner).
    ~Task() {
        if (!task_) return;
        py::gil_scoped_release nogil;
        task_.reset();
    }
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;

    std::unique_ptr<RunOutput> run(bool metadata) {
        refuse_reentry();
        Interruptible interrupt;
        py::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(mutex_);
        const Held held({this});
        interrupt.on_this_thread([&](const Backend::EpochHook& hook) { task_->run(hook); });
        return collect(metadata);
    }

    static std::vector<std::unique_ptr<RunOutput>> run_together(const std::vector<Task*>& tasks, unsigned threads,
                                                                bool metadata) {
        for (const Task* t : tasks)
            if (t == nullptr) throw py::type_error("run_together: every item must be a revgraph.Task");
        std::vector<Task*> order(tasks);
        std::sort(order.begin(), order.end());
        if (std::adjacent_find(order.begin(), order.end()) != order.end())
            throw py::value_error("task: run_together() of a task listed twice (it would race with itself)");
        for (const Task* t : tasks) t->refuse_reentry();
        Interruptible interrupt;
        py::gil_scoped_release nogil;
        // Locked in address order, so two run_together calls sharing tasks cannot deadlock.
        std::vector<std::unique_lock<std::mutex>> locks;
        for (Task* t : order) locks.emplace_back(t->mutex_);
        const Held held(order);
        std::vector<PreparedTask*> prepared;
        for (Task* t : tasks) prepared.push_back(t->task_.get());
        std::vector<std::unique_ptr<RunOutput>> results;
        interrupt.beside_this_thread(
            [&](const Backend::EpochHook& hook) { PreparedTask::run_together(prepared, threads, hook); });
        for (Task* t : tasks) results.push_back(t->collect(metadata));
        return results;
    }

    double preparation_seconds() const { return task_->preparation_seconds(); }
    std::string backend_name() const { return task_->backend().name(); }
    std::string device() const { return task_->backend().device(); }
    std::int64_t train_count() const { return task_->inputs().train_count(); }
    // Where the engine reads each input: the arrays' own data pointers (used in place).
    std::vector<std::uintptr_t> input_addresses() const {
        const TaskInputs& in = task_->inputs();
        return {reinterpret_cast<std::uintptr_t>(in.train_images.data()),
                reinterpret_cast<std::uintptr_t>(in.train_labels.data()),
                reinterpret_cast<std::uintptr_t>(in.test_images.data())};
    }
    std::int64_t test_count() const { return task_->inputs().test_count(); }
    py::object config() const { return json_to_python(task_->config().to_json()); }

private:
    // Under the lock, right after the run it describes. Without metadata only the state is
    // copied back: docs/spec.md §7's hashes cost more than the binding itself (bench/compare/python_overhead.py).
    std::unique_ptr<RunOutput> collect(bool metadata) {
        const auto start = Clock::now();
        TaskOutputs out = metadata ? task_->outputs() : TaskOutputs{task_->backend().read_state(), nullptr};
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return std::make_unique<RunOutput>(std::move(out), task_->layout(), task_->last_run_seconds(), seconds);
    }

    // The thread whose run() or run_together() holds this task's lock: Python's signal handlers run
    // on that thread while it holds it (Interruptible), and one that runs the task again would wait
    // for its own lock forever. Refused instead, with the GIL, before any lock is taken.
    void refuse_reentry() const {
        if (running_on_.load() == std::this_thread::get_id())
            throw std::runtime_error("task: run() of a task this thread is running (from a signal handler?)");
    }
    struct Held {  // running_on_ of each task, while its lock is held
        std::vector<Task*> tasks;
        explicit Held(std::vector<Task*> held) : tasks(std::move(held)) {
            for (Task* t : tasks) t->running_on_ = std::this_thread::get_id();
        }
        ~Held() {
            for (Task* t : tasks) t->running_on_ = std::thread::id();
        }
        Held(const Held&) = delete;
        Held& operator=(const Held&) = delete;
    };

    std::unique_ptr<PreparedTask> task_;
    std::mutex mutex_;
    std::atomic<std::thread::id> running_on_{};
};

// `revgraph backends --json`'s object.
py::object backends() {
    std::vector<BackendAvailability> all;
    {
        py::gil_scoped_release nogil;
        all = backend_availability();
    }
    return json_to_python(backend_availability_json(all));
}

// The CLI's config (engine/config_from.hpp): defaults, then the file, then each --set in order.
// A --set that is not key=value raises SetSyntaxError (a ValueError: the command exits 2 on it).
py::object config_from(const std::optional<std::string>& path, const std::vector<std::string>& sets) {
    try {
        return json_to_python(revgraph::config_from(path, sets).to_json());
    } catch (const SetSyntaxError&) {
        throw;  // the translator's _core.SetSyntaxError
    } catch (const Error& e) { bad(e.what()); }
}

// The process's GPU options (engine/runtime_options.hpp), as the command's --device,
// --workspace-bytes, --pdl and --cluster-blocks set them: None leaves an option as it is. Returns the options in
// force. The numbers come as str() of Python ints, so the engine checks their ranges whatever
// their size (ValueError); changing the options once a GPU task has started is RuntimeError.
py::dict configure_gpu(std::optional<std::string> device, std::optional<std::string> workspace_bytes,
                       std::optional<bool> pdl, std::optional<std::string> cluster_blocks) {
    RuntimeOptions now;
    bool initialized = false;
    {
        // Without the GIL: the options' lock is held while another thread's first GPU task opens the
        // device (a context's creation), and Python's other threads need not wait for that too.
        py::gil_scoped_release nogil;
        RuntimeOptions o = Runtime::options();
        try {
            if (device) o.device = RuntimeOptions::device_from(*device, "device");
            if (workspace_bytes)
                o.cublaslt_workspace_bytes = RuntimeOptions::workspace_bytes_from(*workspace_bytes, "workspace_bytes");
            if (cluster_blocks)
                o.fused_cluster_blocks = RuntimeOptions::cluster_blocks_from(*cluster_blocks, "cluster_blocks");
        } catch (const Error& e) { bad(e.what()); }  // a C++ exception: translated with the GIL back
        if (pdl) o.programmatic_launch = *pdl;
        Runtime::configure(o);
        now = Runtime::options();
        initialized = Runtime::initialized();
    }
    py::dict d;
    d["device"] = now.device;
    d["workspace_bytes"] = now.cublaslt_workspace_bytes;
    d["pdl"] = now.programmatic_launch;
    d["cluster_blocks"] = now.fused_cluster_blocks;
    d["initialized"] = initialized;
    return d;
}

// The command's check of its outputs, before any work (io::require_outputs): an output that is one
// of the inputs or another output, however spelled, raises SameFileError (a usage mistake: the
// harness exits 2 on it, as the command does); one that cannot be written (its directory missing or
// not writable, a directory itself) RuntimeError. Each file is (what, path): ("--predictions", "p.npy").
void require_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                     const std::vector<std::pair<std::string, std::string>>& inputs) {
    std::vector<io::NamedPath> in, out;
    for (const auto& [what, path] : inputs) in.push_back({what, path});
    for (const auto& [what, path] : outputs) out.push_back({what, path});
    io::require_outputs(in, out);
}

// The paths of an IDX folder's training set that the engine may read, each raw and gzipped
// (qualify::training_set_names): tools that check their outputs against them name no file twice.
std::vector<std::string> training_set_names(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& p : qualify::training_set_names(dir)) out.push_back(p.string());
    return out;
}

// All files or none (io::write_files_atomic): the harness never sees half a result.
void write_files_atomic(const std::vector<std::pair<std::string, py::bytes>>& files) {
    std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>> staged;
    for (const auto& [path, bytes] : files) {
        const std::string_view view = bytes;
        staged.push_back({path, std::vector<std::uint8_t>(view.begin(), view.end())});
    }
    py::gil_scoped_release nogil;
    io::write_files_atomic(staged);
}

// ===== qualify / verify / the band rule (issue 24; engine/qualify/) — one block, kept apart =====
// revgraph.qualify(...) and revgraph.verify(...) are engine/qualify's run_qualification and
// verify_submission; required_correct and per_draw_floor are its exact band rule, which `python -m
// revgraph score` and tools/frontier use. Bad band or config: ValueError; anything the run meets (IDX files, the
// folder): RuntimeError.

std::int64_t band_required_correct(std::int64_t total, const std::string& band, const std::string& what) {
    try {
        return qualify::Band::parse(band, what).required_correct(total);
    } catch (const Error& e) { bad(e.what()); }
}

std::int64_t band_per_draw_floor(std::int64_t per_draw, const std::string& band, const std::string& what) {
    try {
        return qualify::Band::parse(band, what).per_draw_floor(per_draw);
    } catch (const Error& e) { bad(e.what()); }
}

// The band's two numbers for `total` query images in draws of `per_draw` (revgraph.band_rule), the
// counts held to qualify::check_band_counts.
py::dict band_numbers(const std::string& band, std::int64_t total, std::int64_t per_draw) {
    py::dict d;
    try {
        const qualify::Band b = qualify::Band::parse(band, "band");
        qualify::check_band_counts(total, per_draw);
        d["required_correct"] = b.required_correct(total);
        d["per_draw_floor"] = b.per_draw_floor(per_draw);
    } catch (const Error& e) { bad(e.what()); }
    return d;
}

// The band's verdict on draws' counts (qualify::verdict_of_counts), as revgraph.band_verdict's dict.
py::dict band_verdict(const std::string& band, const std::vector<std::int64_t>& correct,
                      const std::vector<std::int64_t>& totals) {
    qualify::Verdict v;
    try {
        v = qualify::verdict_of_counts(correct, totals, qualify::Band::parse(band, "band"));
    } catch (const Error& e) { bad(e.what()); }
    py::dict d;
    d["passed"] = v.passed();
    d["total_correct"] = v.total_correct;
    d["total"] = v.total_count;
    d["required_correct"] = v.required_correct;
    d["per_draw_floor"] = v.per_draw_floor;
    d["meets_total"] = v.meets_accuracy_target;
    d["meets_floor"] = v.per_draw_floor_met;
    d["draws_below_floor"] = v.draws_below_floor;
    return d;
}

// The engine's progress lines to a Python callable (None: none), and the place a long qualify or
// verify hears Ctrl-C: the engine calls it between draws without the GIL; here the GIL is taken,
// a pending signal (KeyboardInterrupt) or the callable's own exception is thrown through the
// engine, which stops before its submission folder is committed (SubmissionWriter: all or nothing).
qualify::Progress python_progress(const py::object& callable) {
    auto held = std::make_shared<py::object>(callable);
    return [held](const std::string& line) {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!held->is_none()) (*held)(line);
    };
}

py::object qualify_run(const std::string& idx_dir, const std::optional<std::string>& submission,
                       const std::string& band, std::uint64_t first_seed, std::int64_t draws, bool together,
                       const std::string& backend, const py::dict& config, const py::object& progress) {
    qualify::QualifyRequest r;
    r.idx_dir = idx_dir;
    if (submission) r.submission = *submission;
    try {  // the engine's ranges; out of them is ValueError
        r.protocol.band = qualify::protocol_band(band, "band");
        qualify::check_draw_count(draws, "draws");
        qualify::check_seed_range(first_seed, static_cast<int>(draws));
    } catch (const Error& e) { bad(e.what()); }
    r.protocol.first_seed = first_seed;
    r.protocol.draws = static_cast<int>(draws);
    r.protocol.together = together;
    r.protocol.backend = backend;
    r.protocol.config = task_config(config);
    backend_named(backend);  // an unknown name is ValueError before any work
    r.progress = python_progress(progress);
    qualify::QualifyOutcome o;
    {
        py::gil_scoped_release nogil;
        try {
            o = qualify::run_qualification(r);
        } catch (const Error& e) { throw std::runtime_error(e.what()); }
    }
    return json_to_python(o.report);
}

py::dict verify_run(const std::string& submission, const std::string& idx_dir, bool retrain,
                    const std::optional<std::string>& backend, const py::object& progress) {
    qualify::VerifyRequest r;
    r.progress = python_progress(progress);
    r.submission = submission;
    r.idx_dir = idx_dir;
    r.retrain = retrain;
    r.backend = backend;
    try {
        r.check();
    } catch (const Error& e) { bad(e.what()); }  // an unknown backend too: ValueError
    qualify::VerifyOutcome o;
    {
        py::gil_scoped_release nogil;
        try {
            o = qualify::verify_submission(r);
        } catch (const Error& e) { throw std::runtime_error(e.what()); }
    }
    py::dict d;
    d["holds"] = o.holds();
    d["failures"] = o.failures;
    d["claims"] = o.claims;
    return d;
}
// ===== end of the qualify block =====

// `revgraph data embedded|mnist` as arrays: a task's four arrays, each owning its engine vector
// (no copy); mnist adds whether the IDX files were the official ones.
template <class T>
py::array_t<T> owning_array(std::vector<T> values, std::vector<py::ssize_t> shape) {
    auto* held = new std::vector<T>(std::move(values));
    py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(std::move(shape), held->data(), owner);
}

py::dict task_data(data::TaskData d) {
    const auto n = static_cast<py::ssize_t>(d.train_count()), q = static_cast<py::ssize_t>(d.test_count());
    py::dict out;
    out["train_images"] = owning_array(std::move(d.train_images), {n, 1, 9, 9});
    out["train_labels"] = owning_array(std::move(d.train_labels), {n});
    out["test_images"] = owning_array(std::move(d.test_images), {q, 1, 9, 9});
    out["test_labels"] = owning_array(std::move(d.test_labels), {q});
    return out;
}

py::dict data_embedded(std::uint64_t split_seed) {
    data::TaskData d;
    {
        py::gil_scoped_release nogil;
        d = data::embedded_default_task(split_seed);
    }
    return task_data(std::move(d));
}

py::dict data_mnist(const std::string& idx_dir, std::uint64_t seed) {
    data::TaskData d;
    bool official = false;
    {
        py::gil_scoped_release nogil;
        try {
            const io::MnistSet set = qualify::read_official_training_set(idx_dir);
            const auto checks = qualify::check_official_mnist(set);
            official = std::all_of(checks.begin(), checks.end(), [](const io::IdxFileCheck& c) { return c.official; });
            d = data::mnist_medium_draw(set.images.pixels, set.labels, seed);
        } catch (const Error& e) { throw std::runtime_error(e.what()); }
    }
    py::dict out = task_data(std::move(d));
    out["official_mnist"] = official;
    return out;
}

}  // namespace
}  // namespace revgraph::python

PYBIND11_MODULE(_core, m) {
    using namespace revgraph::python;
    m.doc() = "revgraph's engine: prepared tasks, runs and their results (use the revgraph package).";
    set_syntax_error = py::exception<revgraph::SetSyntaxError>(m, "SetSyntaxError", PyExc_ValueError).ptr();
    same_file_error = py::exception<revgraph::io::SameFileError>(m, "SameFileError", PyExc_ValueError).ptr();
    // The one translation of the engine's errors that reach Python: a --set syntax error is
    // _core.SetSyntaxError and an output that is an input or another output _core.SameFileError
    // (both ValueErrors: usage mistakes); any other revgraph::Error is RuntimeError. What the
    // caller got wrong (inputs, config, a value out of range) is raised as ValueError where it is
    // checked (bad()), and a wrong type as TypeError.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const revgraph::SetSyntaxError& e) {
            PyErr_SetString(set_syntax_error, e.what());
        } catch (const revgraph::io::SameFileError& e) {
            PyErr_SetString(same_file_error, e.what());
        } catch (const revgraph::Error& e) { PyErr_SetString(PyExc_RuntimeError, e.what()); }
    });

    py::class_<RunOutput>(m, "RunOutput")
        .def("predictions", [](py::object self) { return self.cast<const RunOutput&>().predictions(self); })
        .def("scores", [](py::object self) { return self.cast<const RunOutput&>().scores(self); })
        .def("state", &RunOutput::state)
        .def("metadata_json", &RunOutput::metadata_json)
        .def_property_readonly("has_metadata", &RunOutput::has_metadata)
        .def("predictions_npy", &RunOutput::predictions_npy)
        .def_property_readonly("run_seconds", &RunOutput::run_seconds)
        .def_property_readonly("outputs_seconds", &RunOutput::outputs_seconds)
        .def("divergence_warning", &RunOutput::divergence_warning);

    py::class_<Task>(m, "Task")
        .def(py::init<const py::object&, const py::object&, const py::object&, const std::string&, const py::dict&,
                      bool>(),
             py::arg("train_images"), py::arg("train_labels"), py::arg("test_images"), py::arg("backend"),
             py::arg("config"), py::arg("emulate") = false)
        .def("run", &Task::run, py::arg("metadata") = true)
        .def_property_readonly("preparation_seconds", &Task::preparation_seconds)
        .def_property_readonly("backend", &Task::backend_name)
        .def_property_readonly("device", &Task::device)
        .def_property_readonly("train_count", &Task::train_count)
        .def("input_addresses", &Task::input_addresses)
        .def_property_readonly("test_count", &Task::test_count)
        .def_property_readonly("config", &Task::config);

    m.def("run_together", &Task::run_together, py::arg("tasks"), py::arg("threads") = 0u, py::arg("metadata") = true);
    m.def("backends", &backends);
    m.def("backend_names", &revgraph::backend_names);
    m.def("backend_name_list", &revgraph::backend_name_list);
    m.def("config_from", &config_from, py::arg("path"), py::arg("sets"));
    m.def("configure_gpu", &configure_gpu, py::arg("device") = py::none(), py::arg("workspace_bytes") = py::none(),
          py::arg("pdl") = py::none(), py::arg("cluster_blocks") = py::none());
    m.def("write_files_atomic", &write_files_atomic, py::arg("files"));
    m.def("require_outputs", &require_outputs, py::arg("outputs"), py::arg("inputs"));
    m.def("training_set_names", &training_set_names, py::arg("dir"));
    // qualify block (issue 24)
    m.def("required_correct", &band_required_correct, py::arg("total"), py::arg("band"), py::arg("what") = "band");
    m.def("per_draw_floor", &band_per_draw_floor, py::arg("per_draw"), py::arg("band"), py::arg("what") = "band");
    m.def("band_verdict", &band_verdict, py::arg("band"), py::arg("correct"), py::arg("totals"));
    m.def("band_numbers", &band_numbers, py::arg("band"), py::arg("total"), py::arg("per_draw"));
    m.def("leaderboard_bands", &revgraph::qualify::leaderboard_bands);
    m.def("qualify", &qualify_run, py::arg("idx_dir"), py::arg("submission"), py::arg("band"), py::arg("first_seed"),
          py::arg("draws"), py::arg("together"), py::arg("backend"), py::arg("config"), py::arg("progress"));
    m.def("verify", &verify_run, py::arg("submission"), py::arg("idx_dir"), py::arg("retrain"), py::arg("backend"),
          py::arg("progress"));
    // end of the qualify block
    // `revgraph export`: the entry's text, from a file of bands or from a config (engine/export/entry.hpp).
    m.def(
        "export_entry",
        [](const std::string& band, const std::optional<std::string>& from, const py::dict& config) {
            try {
                if (from) {
                    if (!config.empty())
                        bad("export: from_file takes its band's config from the file; give no config keys");
                    return revgraph::exporter::entry_file(revgraph::exporter::entry_from_bands_file(*from, band));
                }
                revgraph::exporter::EntrySource source;
                source.band = band;
                source.config = task_config(config);
                source.origin = config.empty() ? "rev88's config" : "Python";
                return revgraph::exporter::entry_file(source);
            } catch (const revgraph::Error& e) { bad(e.what()); }
        },
        py::arg("band"), py::arg("from_file"), py::arg("config"));
    // A band's config as `revgraph export --from` reads it, and what the file records of its failure
    // ("" for none): tools/race engine judges even a failed band's config, which export refuses.
    m.def(
        "band_config",
        [](const std::string& band, const std::string& from) {
            try {
                const revgraph::exporter::EntrySource s = revgraph::exporter::entry_from_bands_file(from, band);
                return py::make_tuple(s.config.to_json().dump(), s.recorded_failure);
            } catch (const revgraph::Error& e) { bad(e.what()); }
        },
        py::arg("band"), py::arg("from_file"));
    m.def("data_embedded", &data_embedded, py::arg("split_seed"));
    m.def("data_mnist", &data_mnist, py::arg("idx_dir"), py::arg("seed"));
    m.attr("MAX_DRAWS") = revgraph::qualify::kMaxDraws;  // the protocol's range of draws, 1..MAX_DRAWS
    // The config keys (TaskConfig's table), each with whether it takes an integer: for the Python
    // layer's TypeError on a value that is no number at all.
    py::dict keys;
    for (const auto& k : revgraph::TaskConfig::keys()) keys[py::str(k)] = revgraph::TaskConfig::integer_key(k);
    m.attr("CONFIG_KEYS") = keys;
    // The published protocol's defaults (engine/qualify/protocol.hpp), for qualify()'s signature.
    const revgraph::qualify::Protocol published;
    m.attr("PUBLISHED_DRAWS") = published.draws;
    m.attr("PUBLISHED_FIRST_SEED") = published.first_seed;
    m.attr("PUBLISHED_BAND") = published.band.text();
    m.def("version", [] { return std::string(revgraph::version()); });
    m.def("git_commit", [] { return std::string(revgraph::git_commit()); });
}
