// revgraph qualify: docs/spec.md §9's protocol — 11 MNIST-medium draws, correct counts per draw, the
// total against the error band, the per-draw floor 1.5 points below the band, and with
// --submission the verifiable folder. Parses, calls engine/qualify, writes.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/qualify/qualification.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"
#include "tools/revgraph/official_set.hpp"

namespace revgraph::cli {

namespace {

struct QualifyOptions {
    TaskOptions task;
    std::optional<std::string> idx_dir, band, first_seed, draws, output, submission;
    bool quiet = false, together = false;
};

int qualify_command(const QualifyOptions& o) {
    qualify::QualifyRequest r;
    r.idx_dir = *o.idx_dir;
    qualify::Protocol& p = r.protocol;
    // The ranges are the engine's (qualify::protocol_band, check_draw_count); out of them is a usage error.
    try {
        if (o.band) p.band = qualify::protocol_band(*o.band, "qualify: --band");
        if (o.draws) {
            const std::int64_t n = parse_int("draws", *o.draws, INT64_MIN, INT64_MAX);
            qualify::check_draw_count(n, "qualify: --draws");
            p.draws = static_cast<int>(n);
        }
        // The seeds' range is the engine's (Python's qualify takes the same): all of uint64, the last
        // draw's seed not past 2^64 - 1.
        if (o.first_seed) p.first_seed = parse_uint64("first-seed", *o.first_seed);
        qualify::check_seed_range(p.first_seed, p.draws, "qualify: --first-seed");
    } catch (const Error& e) { throw UsageError{e.what()}; }
    if (o.output && o.submission) {  // the folder is renamed into place whole: nothing goes in it before
        namespace fs = std::filesystem;
        std::error_code e1, e2;  // a path that cannot be resolved is left to the checks below, in their words
        fs::path folder = fs::weakly_canonical(fs::absolute(*o.submission), e1);
        const fs::path report = fs::weakly_canonical(fs::absolute(*o.output), e2);
        if (!folder.has_filename()) folder = folder.parent_path();  // "out/" not yet made: its last part is ""
        if (!e1 && !e2 &&
            std::mismatch(folder.begin(), folder.end(), report.begin(), report.end()).first == folder.end())
            throw UsageError{"qualify: --output " + *o.output + " is inside the --submission folder " + *o.submission +
                             ": write the report beside it"};
    }
    if (const auto& out = o.output) {
        NamedPaths inputs = idx_inputs(*o.idx_dir);
        for (auto& config : config_inputs(o.task)) inputs.push_back(std::move(config));
        require_distinct_writable_outputs({{"--output", *out}}, inputs);
    }
    p.config = config_from(o.task);
    refuse_gpu_options_on_cpu(o.task);
    configure_runtime(o.task);
    p.backend = o.task.backend;
    p.together = o.together;  // every draw trained at once (PreparedTask::run_together)
    if (o.submission) r.submission = *o.submission;
    if (o.output) r.report_output = *o.output;  // renamed right after the folder, a signal waiting for both
    if (!o.quiet) r.progress = [](const std::string& line) { std::cerr << "revgraph: " << line << "\n"; };

    const qualify::QualifyOutcome q = qualify::run_qualification(r);
    report_official_mnist(q.checks, o.quiet);  // at the end, so that an error before stays one line
    if (!o.output) write_stdout(q.report.dump(2) + "\n");
    const auto& v = q.verdict;
    std::cerr << "revgraph: qualify " << (v.passed() ? "passed" : "FAILED") << ": " << v.total_correct << " / "
              << v.total_count << " correct (needed " << v.required_correct << ", per-draw floor " << v.per_draw_floor
              << ")" << (q.official ? "" : "; NOT a qualification: the IDX files are not the official MNIST ones")
              << (q.protocol_difference.empty() ? "" : "; NOT a qualification: " + q.protocol_difference)
              << (o.submission ? "; submission " + *o.submission : "") << "\n";
    return v.passed() ? 0 : 3;
}

}  // namespace

Command add_qualify_command(CLI::App& app) {
    auto o = std::make_shared<QualifyOptions>();
    CLI::App* sub = app.add_subcommand(
        "qualify",
        "the 11-draw qualification protocol on the official MNIST training IDX files: correct counts per "
        "draw, the total against the error band, the per-draw floor 1.5 points below it; only the published "
        "protocol (the default draws and first seed, a leaderboard's band) makes a qualification");
    sub->add_option("--idx-dir", o->idx_dir,
                    "holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (or uncompressed); only the "
                    "official files make a qualification (official_mnist in the report): the published gzip "
                    "files, or their exact decompressed bytes")
        ->type_name("DIR")
        ->required()
        ->check(kNonEmpty);
    const qualify::Protocol published;  // the defaults, as the engine has them
    sub->add_option("--band", o->band,
                    "the error band in percent, a decimal number such as 12 or 7.5 (default " + published.band.text() +
                        "); only a leaderboard's band (" + qualify::leaderboard_band_words() +
                        ") makes a qualification")
        ->type_name("PERCENT")
        ->check(kNonEmpty);
    sub->add_option("--first-seed", o->first_seed,
                    "the first draw's seed; the others follow (default " + std::to_string(published.first_seed) + ")")
        ->type_name("S")
        ->check(kNonEmpty);
    sub->add_option("--draws", o->draws, "how many draws (default " + std::to_string(published.draws) + ")")
        ->type_name("N")
        ->check(kNonEmpty);
    sub->add_option("--output", o->output, "the report (else to stdout)")->type_name("Q.json")->check(kNonEmpty);
    sub->add_option("--submission", o->submission,
                    "also write the verifiable submission folder (docs/results.md), all or nothing; never into "
                    "an existing non-empty folder")
        ->type_name("OUT/")
        ->check(kNonEmpty);
    add_task_options(*sub, o->task);
    sub->add_flag("--together", o->together,
                  "run every draw at once (each on its own GPU stream, or CPU thread; with --cluster-blocks, "
                  "cuda-fused trains all 11 in one launch)");
    sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
    sub->footer(config_keys_help() + "\nExit status 3: below the band or a draw below the floor.");
    return {sub, [o] { return qualify_command(*o); }};
}

}  // namespace revgraph::cli
