// revgraph verify: re-derives every claim of a submission folder from the MNIST IDX files
// (engine/qualify/verify.hpp). One line per failed claim on stdout; exit 1 if any fails, 0 if all hold.
#include <iostream>
#include <memory>
#include <optional>

#include "engine/error.hpp"
#include "engine/qualify/verify.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {

namespace {

struct VerifyOptions {
    std::optional<std::string> submission, idx_dir, backend;
    bool retrain = false, quiet = false;
};

int verify_command(const VerifyOptions& o) {
    qualify::VerifyRequest r;
    r.submission = *o.submission;
    r.idx_dir = *o.idx_dir;
    r.retrain = o.retrain;
    r.backend = o.backend;
    if (o.backend && !o.retrain) throw UsageError{"verify: --backend only steers --retrain"};
    r.check();  // the engine's rules: an unknown backend fails here, before any file is read (exit 1, as run's)
    if (!o.quiet) r.progress = [](const std::string& line) { std::cerr << "revgraph: verify: " << line << "\n"; };
    const qualify::VerifyOutcome v = qualify::verify_submission(r);
    std::string text;
    for (const auto& line : v.failures) text += "FAILED " + line + "\n";
    write_stdout(text);
    std::cerr << "revgraph: verify " << *o.submission << ": " << (v.holds() ? "every claim holds" : "claims FAILED")
              << " (" << v.claims - static_cast<int>(v.failures.size()) << " of " << v.claims << " hold"
              << (o.retrain ? ", predictions retrained" : "") << ")\n";
    return v.holds() ? 0 : 1;
}

}  // namespace

Command add_verify_command(CLI::App& app) {
    auto o = std::make_shared<VerifyOptions>();
    CLI::App* sub = app.add_subcommand(
        "verify",
        "re-check a submission folder of `qualify --submission`: its hash chain, each draw's indices and input "
        "hashes, a fresh score of every predictions file, the totals and the verdict");
    sub->add_option("submission", o->submission, "the submission folder")->type_name("SUBMISSION/")->required();
    sub->add_option("--idx-dir", o->idx_dir, "the MNIST training IDX files to re-derive the draws from")
        ->type_name("DIR")
        ->required()
        ->check(kNonEmpty);
    sub->add_flag("--retrain", o->retrain, "train every draw again and require byte-equal predictions");
    sub->add_option("--backend", o->backend, "the backend for --retrain (default: the one the protocol requested)")
        ->type_name("B")
        ->check(kNonEmpty);
    sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
    sub->footer("Each failed claim is one line `FAILED FILE: KEY: ...` on stdout. Exit status 1 when any fails.");
    return {sub, [o] { return verify_command(*o); }};
}

}  // namespace revgraph::cli
