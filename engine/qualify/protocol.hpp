#pragma once
// The qualification protocol of docs/spec.md §9 in one place: the draws, their runs, the freeze of
// the predictions and only then the scoring against the query labels. `revgraph qualify`, the
// submission writer (submission.hpp), `revgraph verify` (verify.hpp) and Python all call this.
//
// The order is enforced by types, not by care: a draw's query labels are kept in SealedLabels,
// which opens only with a FrozenPredictions, and the only way to get one is freeze_predictions(),
// which first hands the prediction manifest to its `persist` step (the submission writes it to
// disk there). So no query label can be read before the predictions are frozen.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config.hpp"
#include "engine/data/draws.hpp"
#include "engine/inputs.hpp"
#include "engine/task.hpp"
#include "engine/io/idx.hpp"
#include "engine/qualify/band.hpp"

namespace revgraph::qualify {

inline constexpr std::uint64_t kPublishedFirstSeed = 2026091400;
inline constexpr int kPublishedDraws = 11;
// The group's leaderboards, in percent error: the bands a qualification (and a race entry) is for.
const std::vector<std::string>& leaderboard_bands();
std::string leaderboard_band_words();  // "12, 8, 5, 3 or 2", for messages and help
// How `draws` draws from `first_seed` at `band` differ from the published protocol (the 11 draws
// from seed 2026091400 at a leaderboard's band), in words; "" where they do not. A run of another
// protocol may pass its band, but only the published one makes a qualification.
std::string protocol_difference(std::size_t draws, std::uint64_t first_seed, const Band& band);

// The protocol's ranges, written once: a band strictly between 0 and 100 percent (a band of 0
// admits no error, one of 100 any) and 1..1000 draws. Throw Error "<what> must be ...". qualify
// (and its front ends, to tell a usage error) and verify (on protocol.json) call these.
void check_band_range(const Band& band, const std::string& what = "band");
// The protocol's band from its text: Band::parse, then check_band_range, one message for both
// ("<what> must be a decimal percentage in (0, 100) ..."), so a text that is no number is not told
// of a 0..100 that the range then narrows.
Band protocol_band(const std::string& text, const std::string& what = "band");
inline constexpr std::int64_t kMaxDraws = 1000;
void check_draw_count(std::int64_t draws, const std::string& what = "draws");
// The draws' seeds follow one another from first_seed; the last must not wrap past 2^64 - 1.
void check_seed_range(std::uint64_t first_seed, int draws, const std::string& what = "first_seed");

struct Protocol {
    TaskConfig config;
    std::string backend = "auto";  // as requested (make_backend's name)
    Band band = Band::parse("12");
    std::uint64_t first_seed = kPublishedFirstSeed;
    int draws = kPublishedDraws;
    bool together = false;  // trains all at once (PreparedTask::run_together), not one after another

    std::uint64_t seed(int index) const { return first_seed + static_cast<std::uint64_t>(index); }
    void check() const {  // the ranges above
        check_band_range(band);
        check_draw_count(draws);
        check_seed_range(first_seed, draws);
    }
};

class FrozenPredictions;

// A draw's query labels, out of reach until the predictions are frozen.
class SealedLabels {
public:
    SealedLabels() = default;
    explicit SealedLabels(std::vector<std::int64_t> labels) : labels_(std::move(labels)) {}
    const std::vector<std::int64_t>& open(const FrozenPredictions&) const { return labels_; }

private:
    std::vector<std::int64_t> labels_;
};

// One draw's entry of draw-manifest.json: everything about it that is not a query label.
struct DrawRecord {
    int index = 0;
    std::uint64_t dataset_seed = 0;
    std::string train_indices_sha256, test_indices_sha256;  // int64 little-endian, C order
    bool train_test_disjoint = false;
    nlohmann::ordered_json input_sha256;  // train_images, train_labels, test_images
    nlohmann::ordered_json to_json() const;
};

struct PreparedDraw {
    DrawRecord record;
    HashedInputs inputs;  // checked and hashed once: record.input_sha256 are these hashes
    SealedLabels labels;
};

// The draws of `protocol` from the training set, in index order; built on parallel threads when
// `parallel` (one data::DrawSource, safe from any thread), else one after another. Both give the same bytes.
std::vector<PreparedDraw> prepare_draws(const io::MnistSet& set, const Protocol& protocol, bool parallel);
// One draw alone (verify re-derives them one by one where memory matters).
PreparedDraw prepare_draw(const data::DrawSource& source, const Protocol& protocol, int index);

// One draw trained and predicted: its predictions and its RESULT.json, labels still sealed.
struct DrawRun {
    DrawRecord record;
    std::vector<std::int64_t> predictions;
    nlohmann::ordered_json result;  // the run's RESULT.json
    double run_seconds = 0;         // training_prediction_seconds
    std::string backend, device;
    SealedLabels labels;
};

using Progress = std::function<void(const std::string& line)>;

// Trains and predicts every draw (all at once with protocol.together); `source` names the IDX
// directory in each RESULT.json's "input".
std::vector<DrawRun> run_draws(std::vector<PreparedDraw> draws, const Protocol& protocol, const std::string& source,
                               const Progress& progress = nullptr);

// prediction-manifest.json's content, and the proof that it was persisted.
class FrozenPredictions {
public:
    const nlohmann::ordered_json& manifest() const { return manifest_; }
    const std::string& text() const { return text_; }  // the manifest's bytes as persisted

private:
    friend FrozenPredictions freeze_predictions(const std::vector<DrawRun>&, const nlohmann::ordered_json&,
                                                const std::function<void(const std::string&)>&);
    FrozenPredictions() = default;
    nlohmann::ordered_json manifest_;
    std::string text_;
};

// The file names of one draw inside a submission: predictions/draw-NN.npy, results/draw-NN.json.
std::string predictions_file(int index);
std::string result_file(int index);
// What a draw's files hold: the predictions .npy bytes and the RESULT.json text.
std::vector<std::uint8_t> predictions_bytes(const DrawRun& run);
std::string result_text(const DrawRun& run);

// Builds prediction-manifest.json (per draw the sha256 of its predictions and result files,
// `hashes` = {protocol_sha256, draw_manifest_sha256}, test_labels_scored: false), calls
// persist(text) (a no-op without a submission), and only then returns the key to the labels.
FrozenPredictions freeze_predictions(const std::vector<DrawRun>& runs, const nlohmann::ordered_json& hashes,
                                     const std::function<void(const std::string&)>& persist);

struct DrawScore {
    int index = 0;
    std::uint64_t dataset_seed = 0;
    std::int64_t correct = 0, total = 0;
    std::string test_labels_sha256;
};

// The band's verdict, in exact integers.
struct Verdict {
    std::int64_t total_correct = 0, total_count = 0;
    std::int64_t required_correct = 0, per_draw_floor = 0;
    bool meets_accuracy_target = false;  // total_correct >= required_correct
    bool per_draw_floor_met = false;     // every draw >= per_draw_floor
    std::vector<int> draws_below_floor;  // 1-based, in draw order
    bool passed() const { return meets_accuracy_target && per_draw_floor_met; }
};

struct Scores {
    std::vector<DrawScore> draws;
    Verdict verdict;
};

// Correct predictions of each draw against its labels; throws Error when the counts differ.
std::int64_t correct_count(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels);
DrawScore score_draw(const DrawRecord& record, const std::vector<std::int64_t>& predictions,
                     const std::vector<std::int64_t>& labels);
Verdict verdict_of(const std::vector<DrawScore>& draws, const Band& band);
// The counts a band's two numbers are asked for (`revgraph band --total`, revgraph.band_rule):
// total query images and one draw's, 1 <= per_draw <= total. Error otherwise.
void check_band_counts(std::int64_t total, std::int64_t per_draw);
// The same verdict on bare counts: draw i has correct[i] right of totals[i]. The one rule of a
// band's verdict (qualify, verify, `revgraph band --correct`, revgraph.band_verdict, and through
// those the race harness's and tools/frontier select's; the race choice's margin, counts above the
// rule's numbers, is its own). Error where no draw could have the counts: no draw, lengths that
// differ, a total below 1, a count outside 0..total.
Verdict verdict_of_counts(const std::vector<std::int64_t>& correct, const std::vector<std::int64_t>& totals,
                          const Band& band);
Scores score_draws(const std::vector<DrawRun>& runs, const FrozenPredictions& frozen, const Band& band);

// accuracy.json's per-draw and total statistics (without the hash that ties it to the manifest).
nlohmann::ordered_json accuracy_json(const Scores& scores, const Band& band, bool official);

}  // namespace revgraph::qualify
