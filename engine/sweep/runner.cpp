#include "engine/sweep/runner.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/parallel_for.hpp"
#include "engine/sweep/jsonl.hpp"
#include "engine/sweep/line_file.hpp"
#include "engine/task.hpp"

namespace revgraph::sweep {
namespace {

// The "backend" value a line holds, as far as the text reaches ("" where it does not reach it).
std::string backend_in(const std::string& text) {
    static const std::string key = ",\"backend\":\"";
    const std::size_t at = text.find(key);
    if (at == std::string::npos) return "";
    const std::size_t value = at + key.size(), end = text.find('"', value);
    return text.substr(value, end == std::string::npos ? std::string::npos : end - value);
}

// The resume rule: the lines already in the output must be this shard's first points, byte for byte
// up to their results (`head(k, backend)`: point k's line up to its results, naming `backend`); a
// partial last line (the sweep was stopped while writing) must be the start of the next one. Anything
// else is another file, left as it is. `backend`: the backend the sweep resolved at that point's
// width, or, where empty, the one each line names (a --check of "auto": "auto" resolves on the
// machine that runs the sweep). Returns the lines there, complete and partial.
Lines check_resume(const std::string& name, const std::string& content, const std::vector<std::size_t>& points,
                   const std::function<std::string(std::size_t, const std::string&)>& head,
                   const std::function<std::string(std::size_t)>& backend) {
    Lines existing = split_lines(content);
    const auto refuse = [&](const std::string& why) {
        throw Error(name + ": " + why + " (another grid, shard, backend or input?); choose another --output");
    };
    const auto expected = [&](std::size_t k, const std::string& text) {
        const std::string b = backend(k);
        return head(k, b.empty() ? backend_in(text) : b);
    };
    if (existing.complete.size() > points.size())
        refuse("holds " + std::to_string(existing.complete.size()) + " lines, this sweep has " +
               std::to_string(points.size()) + " points");
    for (std::size_t k = 0; k < existing.complete.size(); ++k) {
        const std::string& line = existing.complete[k];
        if (line.rfind(expected(k, line), 0) != 0 || !nlohmann::json::accept(line))
            refuse("line " + std::to_string(k + 1) + " is not point " + std::to_string(points[k]) + " of this sweep");
    }
    if (!existing.partial.empty()) {
        const std::size_t k = existing.complete.size();
        bool ok = k < points.size();
        if (ok) {
            const std::string h = expected(k, existing.partial);
            const std::size_t n = std::min(h.size(), existing.partial.size());
            ok = h.compare(0, n, existing.partial, 0, n) == 0;
        }
        if (!ok) refuse("it ends in text that is not the start of this sweep's next line");
    }
    return existing;
}

}  // namespace

SweepSummary run_sweep(const SweepJob& job) {
    using Clock = std::chrono::steady_clock;
    if (!job.inputs) throw Error("sweep: no inputs");
    const HashedInputs inputs(*job.inputs);  // checked and hashed once for every point
    if (!job.test_labels.empty() && static_cast<std::int64_t>(job.test_labels.size()) != job.inputs->test_count())
        throw Error("sweep: " + std::to_string(job.test_labels.size()) + " test labels for " +
                    std::to_string(job.inputs->test_count()) + " query images");
    SweepSummary s;
    s.jobs = job.jobs ? job.jobs : usable_cpus();
    const std::vector<std::size_t> points = shard_points(job.grid.size(), job.shard);
    s.points = points.size();
    // Every width the grid asks for must run on the backend, checked before a line is written, and
    // the backend each width runs on, named in its lines ("auto" may pick another at another width).
    std::map<int, std::string> backend_of_width;
    std::vector<std::string> widths = {std::to_string(job.grid.base().width)};
    for (const Axis& axis : job.grid.axes())
        if (axis.key == "width") widths = axis.values;
    const std::string grid_digest = job.grid.digest(), inputs_sha256 = inputs_digest(inputs, job.test_labels);
    const auto head = [&](std::size_t k, const std::string& backend) {
        return line_head(
            PointHead{points[k], job.grid.size(), grid_digest, job.grid.point(points[k]), backend, inputs_sha256});
    };
    const auto backend_at = [&](std::size_t k) { return backend_of_width.at(job.grid.point(points[k]).width); };
    const std::string name = job.output.string();
    if (job.check_only) {
        // A check may run where the sweep will not (a cluster's login node for its GPU nodes): a GPU
        // backend is checked by its name and its width rule as its emulation applies it, not by
        // whether this machine has a device.
        const BackendRow& row = backend_row(job.backend);
        for (const std::string& value : widths) {
            TaskConfig c = job.grid.base();
            c.set("width", value);
            if (!row.gpu)
                require_runs_width(job.backend, c);
            else if (const std::string why = width_refusal(*make_emulated_backend(job.backend, "--check"), c.width);
                     !why.empty())
                throw Error(why);
            // What the lines name: a GPU backend its own name, "auto" whatever it resolves to there.
            backend_of_width[c.width] = row.gpu                 ? job.backend
                                        : job.backend == "auto" ? ""
                                                                : make_backend(job.backend, c)->name();
        }
        // The output the sweep would resume, read, not opened for writing.
        if (std::filesystem::exists(job.output)) {
            const auto bytes = io::read_file(job.output);
            check_resume(name, std::string(bytes.begin(), bytes.end()), points, head, backend_at);
        }
        s.backend = row.gpu ? job.backend : make_backend(job.backend)->name();
        return s;
    }
    for (const std::string& value : widths) {
        TaskConfig c = job.grid.base();
        c.set("width", value);
        require_runs_width(job.backend, c);
        backend_of_width[c.width] = make_backend(job.backend, c)->name();
    }
    bool asynchronous = false;
    {
        const auto probe = make_backend(job.backend);  // what "auto" resolves to for rev88's width
        s.backend = probe->name();
        asynchronous = probe->asynchronous();
    }

    // Resume (check_resume): a partial last line is cut.
    LineFile file(job.output);
    const Lines existing = check_resume(name, file.initial_content(), points, head, backend_at);
    if (!existing.partial.empty()) file.truncate(file.initial_content().size() - existing.partial.size());
    s.skipped = existing.complete.size();

    const auto start = Clock::now();
    auto last_sync = start;
    const auto report = [&] {
        if (job.on_progress)
            job.on_progress(Progress{s.skipped + s.ran, s.points, s.ran,
                                     std::chrono::duration<double>(Clock::now() - start).count()});
    };
    report();
    // Batches of `jobs` points: memory holds one batch, however large the grid.
    for (std::size_t first = s.skipped; first < points.size(); first += s.jobs) {
        const std::size_t count = std::min<std::size_t>(s.jobs, points.size() - first);
        std::vector<std::unique_ptr<PreparedTask>> tasks(count);
        const auto prepare = [&](std::size_t k) {
            const TaskConfig config = job.grid.point(points[first + k]);
            tasks[k] = std::make_unique<PreparedTask>(inputs, config, make_backend(job.backend, config));
        };
        // CPU tasks are prepared on the worker threads too (drawing the initial parameters and the
        // permutations takes about as long as a small run); GPU tasks on this thread.
        if (asynchronous) {
            for (std::size_t k = 0; k < count; ++k) prepare(k);
        } else {
            parallel_for(count, s.jobs, prepare);
        }
        std::vector<PreparedTask*> batch;
        for (const auto& t : tasks) batch.push_back(t.get());
        PreparedTask::run_together(batch, s.jobs);
        for (std::size_t k = 0; k < count; ++k) {
            const TaskOutputs out = tasks[k]->outputs();
            // What ran, as the task says: the config and backend it was prepared with.
            const PointHead h{points[first + k],          job.grid.size(), grid_digest, tasks[k]->config(),
                              tasks[k]->backend().name(), inputs_sha256};
            file.append(format_line(h, out, job.test_labels, tasks[k]->last_run_seconds()));
            tasks[k].reset();  // its buffers, host and device, go now
            ++s.ran;
        }
        // Durable at least once a second and at the end; more often would cost more than short
        // tasks (an fdatasync takes milliseconds), and a crash loses only what a resume reruns.
        if (Clock::now() - last_sync >= std::chrono::seconds(1) || first + count == points.size()) {
            file.sync();
            last_sync = Clock::now();
        }
        report();
    }
    s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return s;
}

}  // namespace revgraph::sweep
