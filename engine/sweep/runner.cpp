#include "engine/sweep/runner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/error.hpp"
#include "engine/parallel_for.hpp"
#include "engine/sweep/jsonl.hpp"
#include "engine/sweep/line_file.hpp"
#include "engine/task.hpp"

namespace revgraph::sweep {

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
    const std::string grid_digest = job.grid.digest(), inputs_sha256 = inputs_digest(inputs, job.test_labels);
    const auto point_head = [&](std::size_t k) {
        PointHead h{points[k], job.grid.size(), grid_digest, job.grid.point(points[k]), "", inputs_sha256};
        h.backend = backend_of_width.at(h.config.width);
        return h;
    };
    const auto head = [&](std::size_t k) { return line_head(point_head(k)); };

    // Resume: the lines already there must be this shard's first points, byte for byte up to
    // their results; a partial last line (the sweep was stopped while writing) must be the start
    // of the next one, and is dropped. Anything else is another file, left as it is.
    LineFile file(job.output);
    const std::string name = job.output.string();
    const Lines existing = split_lines(file.initial_content());
    const auto refuse = [&](const std::string& why) {
        throw Error(name + ": " + why + " (another grid, shard, backend or input?); choose another --output");
    };
    if (existing.complete.size() > points.size())
        refuse("holds " + std::to_string(existing.complete.size()) + " lines, this sweep has " +
               std::to_string(points.size()) + " points");
    for (std::size_t k = 0; k < existing.complete.size(); ++k) {
        const std::string& line = existing.complete[k];
        if (line.rfind(head(k), 0) != 0 || !nlohmann::json::accept(line))
            refuse("line " + std::to_string(k + 1) + " is not point " + std::to_string(points[k]) + " of this sweep");
    }
    if (!existing.partial.empty()) {
        const std::size_t k = existing.complete.size();
        bool ok = k < points.size();
        if (ok) {
            const std::string h = head(k);
            const std::size_t n = std::min(h.size(), existing.partial.size());
            ok = h.compare(0, n, existing.partial, 0, n) == 0;
        }
        if (!ok) refuse("it ends in text that is not the start of this sweep's next line");
        file.truncate(file.initial_content().size() - existing.partial.size());
    }
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
