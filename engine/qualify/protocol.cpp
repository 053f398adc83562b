#include "engine/qualify/protocol.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>

#include "engine/backends.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/sha256.hpp"
#include "engine/task_files.hpp"
#include "engine/parallel_for.hpp"
#include "engine/words.hpp"

namespace revgraph::qualify {

nlohmann::ordered_json DrawRecord::to_json() const {
    return {{"index", index},
            {"dataset_seed", dataset_seed},
            {"train_indices_sha256", train_indices_sha256},
            {"test_indices_sha256", test_indices_sha256},
            {"train_test_disjoint", train_test_disjoint},
            {"input_sha256", input_sha256}};
}

namespace {

// Whether no source image is in both halves. Draw indices are 0 .. n-1 of a 60,000-image set: a
// table of seen indices answers in one pass over each (sorting both took most of this).
bool disjoint(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
    std::int64_t lo = 0, hi = -1;
    for (const auto* v : {&a, &b})
        for (const std::int64_t i : *v) {
            lo = std::min(lo, i);
            hi = std::max(hi, i);
        }
    if (lo < 0 || hi >= (std::int64_t{1} << 28)) {  // not a draw's indices: the general way
        std::vector<std::int64_t> x = a, y = b;
        std::sort(x.begin(), x.end());
        std::sort(y.begin(), y.end());
        std::vector<std::int64_t> both;
        std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(both));
        return both.empty();
    }
    std::vector<bool> in_a(static_cast<std::size_t>(hi + 1));
    for (const std::int64_t i : a) in_a[static_cast<std::size_t>(i)] = true;
    return std::none_of(b.begin(), b.end(), [&](std::int64_t i) { return in_a[static_cast<std::size_t>(i)]; });
}

}  // namespace

PreparedDraw prepare_draw(const data::DrawSource& source, const Protocol& protocol, int index) {
    const std::uint64_t seed = protocol.seed(index);
    data::TaskData d = source.mnist_medium_draw(seed);
    DrawRecord r;
    r.index = index;
    r.dataset_seed = seed;
    r.train_indices_sha256 = io::sha256_hex(d.train_indices);
    r.test_indices_sha256 = io::sha256_hex(d.test_indices);
    r.train_test_disjoint = disjoint(d.train_indices, d.test_indices);
    HashedInputs inputs(TaskInputs{std::move(d.train_images), std::move(d.train_labels), std::move(d.test_images)});
    r.input_sha256 = inputs.hashes();
    return PreparedDraw{std::move(r), std::move(inputs), SealedLabels(std::move(d.test_labels))};
}

std::vector<PreparedDraw> prepare_draws(const io::MnistSet& set, const Protocol& protocol, bool parallel) {
    const data::DrawSource source(set.images.pixels, set.labels);  // each image resized at most once, for every draw
    std::vector<std::unique_ptr<PreparedDraw>> slots(static_cast<std::size_t>(protocol.draws));
    // Each draw on whichever core is free (one alone where !parallel); the same bytes either way.
    parallel_for(slots.size(), parallel ? usable_cpus() : 1u, [&](std::size_t i) {
        slots[i] = std::make_unique<PreparedDraw>(prepare_draw(source, protocol, static_cast<int>(i)));
    });
    std::vector<PreparedDraw> out;
    out.reserve(slots.size());
    for (auto& s : slots) out.push_back(std::move(*s));
    return out;
}

std::string predictions_file(int index) {
    char name[32];
    std::snprintf(name, sizeof name, "predictions/draw-%02d.npy", index);
    return name;
}

std::string result_file(int index) {
    char name[32];
    std::snprintf(name, sizeof name, "results/draw-%02d.json", index);
    return name;
}

namespace {

DrawRun collect(PreparedDraw& draw, PreparedTask& task, const std::string& source) {
    TaskOutputs out = task.outputs();
    DrawRun run;
    run.record = draw.record;
    run.run_seconds = task.last_run_seconds();
    run.backend = task.backend().name();
    run.device = task.backend().device();
    run.predictions = std::move(out.state.predictions);
    // As `revgraph run --output` writes it, with no query label in it (none was read).
    auto& m = out.metadata;
    m["run_seconds"] = std::vector<double>{run.run_seconds};
    m["input"] = "MNIST-medium draw " + std::to_string(draw.record.index) + " (dataset seed " +
                 std::to_string(draw.record.dataset_seed) + ") of " + source;
    m["predictions_file"] = std::filesystem::path(predictions_file(draw.record.index)).filename().string();
    run.result = std::move(m);
    run.labels = std::move(draw.labels);
    return run;
}

}  // namespace

std::vector<DrawRun> run_draws(std::vector<PreparedDraw> draws, const Protocol& protocol, const std::string& source,
                               const Progress& progress) {
    std::vector<DrawRun> runs;
    const auto done = [&](const DrawRun& r) {
        if (progress)
            progress("draw " + std::to_string(r.record.index) + " (seed " + std::to_string(r.record.dataset_seed) +
                     "): trained and predicted in " + std::to_string(r.run_seconds * 1e3) + " ms");
    };
    if (protocol.together) {
        std::vector<std::unique_ptr<PreparedTask>> tasks;
        std::vector<PreparedTask*> all;
        for (auto& d : draws) {
            tasks.push_back(std::make_unique<PreparedTask>(d.inputs, protocol.config,
                                                           make_backend(protocol.backend, protocol.config)));
            all.push_back(tasks.back().get());
        }
        PreparedTask::run_together(all);
        for (std::size_t i = 0; i < draws.size(); ++i) {
            runs.push_back(collect(draws[i], *tasks[i], source));
            tasks[i].reset();  // its buffers, host and device, go now
            done(runs.back());
        }
    } else {
        for (auto& d : draws) {
            PreparedTask task(d.inputs, protocol.config, make_backend(protocol.backend, protocol.config));
            task.run();
            runs.push_back(collect(d, task, source));
            done(runs.back());
        }
    }
    return runs;
}

std::vector<std::uint8_t> predictions_bytes(const DrawRun& run) {
    return io::serialize_npy(predictions_array(run.predictions));
}

std::string result_text(const DrawRun& run) { return run.result.dump(2) + "\n"; }

FrozenPredictions freeze_predictions(const std::vector<DrawRun>& runs, const nlohmann::ordered_json& hashes,
                                     const std::function<void(const std::string&)>& persist) {
    FrozenPredictions f;
    auto& m = f.manifest_;
    for (const auto& [k, v] : hashes.items()) m[k] = v;
    m["draws"] = nlohmann::ordered_json::array();
    for (const DrawRun& r : runs) {
        const auto npy = predictions_bytes(r);
        const std::string result = result_text(r);
        m["draws"].push_back({{"index", r.record.index},
                              {"predictions_file", predictions_file(r.record.index)},
                              {"predictions_sha256", io::sha256_hex(npy)},
                              {"result_file", result_file(r.record.index)},
                              {"result_sha256", io::sha256_hex(result.data(), result.size())}});
    }
    m["test_labels_scored"] = false;
    f.text_ = m.dump(2) + "\n";
    if (persist) persist(f.text_);  // on disk (with a submission) before the labels can be opened
    return f;
}

std::int64_t correct_count(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels) {
    if (predictions.size() != labels.size())
        throw Error("score: " + std::to_string(predictions.size()) + " predictions for " +
                    std::to_string(labels.size()) + " query labels");
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
    return correct;
}

DrawScore score_draw(const DrawRecord& record, const std::vector<std::int64_t>& predictions,
                     const std::vector<std::int64_t>& labels) {
    DrawScore s;
    s.index = record.index;
    s.dataset_seed = record.dataset_seed;
    s.correct = correct_count(predictions, labels);
    s.total = static_cast<std::int64_t>(labels.size());
    s.test_labels_sha256 = io::sha256_hex(labels);
    return s;
}

Verdict verdict_of(const std::vector<DrawScore>& draws, const Band& band) {
    std::vector<std::int64_t> correct, totals;
    for (const auto& d : draws) correct.push_back(d.correct), totals.push_back(d.total);
    return verdict_of_counts(correct, totals, band);
}

void check_band_counts(std::int64_t total, std::int64_t per_draw) {
    if (per_draw < 1) throw Error("a draw of " + std::to_string(per_draw) + " query images (at least 1)");
    if (total < per_draw)
        throw Error("a total of " + std::to_string(total) + " query images, less than one draw of " +
                    std::to_string(per_draw));
}

Verdict verdict_of_counts(const std::vector<std::int64_t>& correct, const std::vector<std::int64_t>& totals,
                          const Band& band) {
    if (correct.empty()) throw Error("a verdict needs at least one draw");
    if (correct.size() != totals.size())
        throw Error("correct counts for " + std::to_string(correct.size()) +
                    (correct.size() == 1 ? " draw" : " draws") + ", totals for " + std::to_string(totals.size()));
    Verdict v;
    std::int64_t largest = 0;
    for (std::size_t i = 0; i < correct.size(); ++i) {
        const std::string draw = "draw " + std::to_string(i + 1) + ": ";
        if (totals[i] < 1) throw Error(draw + "a total of " + std::to_string(totals[i]) + " query images");
        if (correct[i] < 0 || correct[i] > totals[i])
            throw Error(draw + std::to_string(correct[i]) + " correct of " + std::to_string(totals[i]));
        if (v.total_count > std::numeric_limits<std::int64_t>::max() - totals[i])
            throw Error("the draws' totals overflow 64 bits");
        v.total_correct += correct[i];
        v.total_count += totals[i];
        largest = std::max(largest, totals[i]);
        if (correct[i] < band.per_draw_floor(totals[i])) v.draws_below_floor.push_back(static_cast<int>(i + 1));
    }
    // The floor reported is of one draw's count (10,000 in the protocol; every draw has the same);
    // each draw is held to its own total's.
    v.per_draw_floor = band.per_draw_floor(largest);
    v.per_draw_floor_met = v.draws_below_floor.empty();
    v.required_correct = band.required_correct(v.total_count);
    v.meets_accuracy_target = v.total_correct >= v.required_correct;
    return v;
}

Scores score_draws(const std::vector<DrawRun>& runs, const FrozenPredictions& frozen, const Band& band) {
    Scores s;
    for (const DrawRun& r : runs) s.draws.push_back(score_draw(r.record, r.predictions, r.labels.open(frozen)));
    s.verdict = verdict_of(s.draws, band);
    return s;
}

nlohmann::ordered_json accuracy_json(const Scores& scores, const Band& band, bool official) {
    nlohmann::ordered_json j;
    j["draws"] = nlohmann::ordered_json::array();
    std::vector<double> percents;
    for (const auto& d : scores.draws) {
        const double p = d.total ? 100.0 * double(d.correct) / double(d.total) : 0.0;
        percents.push_back(p);
        j["draws"].push_back({{"index", d.index},
                              {"dataset_seed", d.dataset_seed},
                              {"correct", d.correct},
                              {"total", d.total},
                              {"accuracy_percent", p},
                              {"test_labels_sha256", d.test_labels_sha256}});
    }
    const Verdict& v = scores.verdict;
    const double accuracy = v.total_count ? 100.0 * double(v.total_correct) / double(v.total_count) : 0.0;
    j["total_correct"] = v.total_correct;
    j["total_count"] = v.total_count;
    j["accuracy_percent"] = accuracy;
    // Sample standard deviation (ddof 1) of the per-draw accuracies in percentage points, summed in
    // draw order; null for a single draw.
    if (percents.size() > 1) {
        double mean = 0;
        for (double p : percents) mean += p;
        mean /= double(percents.size());
        double ss = 0;
        for (double p : percents) ss += (p - mean) * (p - mean);
        j["sample_sd_pp"] = std::sqrt(ss / double(percents.size() - 1));
    } else {
        j["sample_sd_pp"] = nullptr;
    }
    j["error_percent"] = v.total_count ? 100.0 * double(v.total_count - v.total_correct) / double(v.total_count) : 0.0;
    j["band"] = {{"band_percent", band.text()},
                 {"rule", "required_correct = ceil(total_count * (100 - band_percent) / 100), in exact integers"},
                 {"required_correct", v.required_correct},
                 {"meets_accuracy_target", v.meets_accuracy_target},
                 {"per_draw_floor", v.per_draw_floor},
                 {"per_draw_floor_met", v.per_draw_floor_met},
                 {"passed", v.passed()}};
    j["official_mnist"] = official;
    const bool published =
        protocol_difference(scores.draws.size(), scores.draws.empty() ? 0 : scores.draws.front().dataset_seed, band)
            .empty();
    j["published_protocol"] = published;
    j["qualified"] = v.passed() && official && published;
    return j;
}

const std::vector<std::string>& leaderboard_bands() {
    static const std::vector<std::string> bands{"12", "8", "5", "3", "2"};
    return bands;
}

std::string leaderboard_band_words() { return one_of(leaderboard_bands()); }

std::string protocol_difference(std::size_t draws, std::uint64_t first_seed, const Band& band) {
    std::string why;
    if (draws != static_cast<std::size_t>(kPublishedDraws) || first_seed != kPublishedFirstSeed)
        why = std::to_string(draws) + (draws == 1 ? " draw" : " draws") + " from seed " + std::to_string(first_seed) +
              ", not the protocol's " + std::to_string(kPublishedDraws) + " from " +
              std::to_string(kPublishedFirstSeed);
    const auto& boards = leaderboard_bands();
    if (std::none_of(boards.begin(), boards.end(),
                     [&](const std::string& b) { return Band::parse(b).nano_percent() == band.nano_percent(); }))
        why += (why.empty() ? "" : "; ") +
               ("band " + band.text() + " %, not a leaderboard's (" + leaderboard_band_words() + ")");
    return why;
}

namespace {
Error band_range_error(const std::string& what, const std::string& text) {
    return Error(what + " must be a decimal percentage in (0, 100) (\"12\", \"7.5\"), got '" + text + "'");
}
}  // namespace

void check_band_range(const Band& band, const std::string& what) {
    if (band.nano_percent() <= 0 || band.nano_percent() >= Band::parse("100").nano_percent())
        throw band_range_error(what, band.text());
}

Band protocol_band(const std::string& text, const std::string& what) {
    Band band;
    try {
        band = Band::parse(text, what);
    } catch (const Error&) { throw band_range_error(what, text); }
    check_band_range(band, what);
    return band;
}

void check_draw_count(std::int64_t draws, const std::string& what) {
    if (draws < 1 || draws > kMaxDraws)
        throw Error(what + " must be in 1.." + std::to_string(kMaxDraws) + ", got " + std::to_string(draws));
}

void check_seed_range(std::uint64_t first_seed, int draws, const std::string& what) {
    const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - first_seed;
    if (draws > 0 && room < static_cast<std::uint64_t>(draws - 1))
        throw Error(what + " " + std::to_string(first_seed) + " leaves no room for " + std::to_string(draws) +
                    " draws: their seeds follow one another up to 2^64 - 1");
}

}  // namespace revgraph::qualify
