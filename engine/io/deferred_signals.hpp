#pragma once
// While one is alive, Ctrl-C and the other signals that end a process when asked (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) wait: they are recorded, and when the last guard ends the handlers that were
// in force come back and each recorded signal is raised again, so the process ends (or Python
// raises KeyboardInterrupt) then, not in the middle.
//
// Why: a result set's commit (write_result_set: the earlier RESULT.json removed, the data files
// renamed, the new one renamed last) and a qualify run's two outputs (the submission folder, then
// the report) take a few renames; a signal between two of them left no result file, or one output
// new and the other old. SIGKILL and a power cut cannot be deferred: what they leave is what
// write_result_set's comment promises (no result file describes a mixed set).
//
// Process-wide (handlers, not a thread's mask: a signal goes to any thread that does not block it),
// and nested or used from several threads at once: the handlers are swapped by the first guard and
// restored by the last. Keep a guard's scope to the renames: a signal waits as long as it lasts.
// A guard that ends while an error unwinds still raises what it recorded: the process then ends
// by the signal, as asked, before the error line (the next writer removes what it left staged).
namespace revgraph::io {

class DeferredSignals {
public:
    DeferredSignals();
    ~DeferredSignals();
    DeferredSignals(const DeferredSignals&) = delete;
    DeferredSignals& operator=(const DeferredSignals&) = delete;
};

}  // namespace revgraph::io
