#include "engine/qualify/verify.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>

#include "engine/backends.hpp"
#include "engine/classes.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/json_text.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/sha256.hpp"
#include "engine/task_files.hpp"
#include "engine/qualify/qualification.hpp"
#include "engine/qualify/training_set.hpp"
#include "engine/task.hpp"

namespace revgraph::qualify {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

std::string shown(const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// j[key] where j is an object holding key, else null: the one way verify reads a field of a file's
// JSON, which may have any shape, so that no shape throws.
Json field(const Json& j, const std::string& key) {
    if (j.is_object()) {
        const auto it = j.find(key);
        if (it != j.end()) return *it;
    }
    return nullptr;
}

class Checker {
public:
    explicit Checker(fs::path dir) : dir_(std::move(dir)) {}

    // A claim that failed: one line, and one claim counted (so "N of M hold" adds up).
    void fail(const std::string& file, const std::string& key, const std::string& what) {
        ++out.claims;
        out.failures.push_back(file + (key.empty() ? "" : ": " + key) + ": " + what);
    }
    void held() { ++out.claims; }  // a claim that holds
    // One claim: `claimed` (from the file) must equal `derived`.
    bool equal(const std::string& file, const std::string& key, const Json& claimed, const Json& derived) {
        if (claimed == derived) {
            held();
            return true;
        }
        // Values of two kinds (the text "0" against the number 0) are shown as JSON, quotes and all:
        // bare, they would read as the same value.
        const bool kinds_differ = claimed.is_string() != derived.is_string();
        const auto show = [&](const Json& j) { return kinds_differ ? j.dump() : shown(j); };
        fail(file, key, "claims " + show(claimed) + ", re-derived " + show(derived));
        return false;
    }
    // Every key of `claimed` that `derived` lacks is a claim nothing backs (a "reviewed": true, say):
    // a failure each; `also` names keys checked elsewhere.
    void nothing_else(const std::string& file, const std::string& prefix, const Json& claimed, const Json& derived,
                      const std::vector<std::string>& also = {}) {
        if (!claimed.is_object()) return;
        for (const auto& [name, value] : claimed.items())
            if (!derived.contains(name) && std::find(also.begin(), also.end(), name) == also.end())
                fail(file, prefix + name, "claimed, but nothing re-derives it");
    }
    // The value at `key` of object `j`, null (and a failure) where it is missing.
    Json at(const std::string& file, const Json& j, const std::string& key, const std::string& path) {
        if (j.is_object() && j.contains(key)) return j[key];
        fail(file, path, "missing");
        return nullptr;
    }
    // The file's bytes, or nullopt (and a failure) where it is missing or unreadable.
    std::optional<std::vector<std::uint8_t>> bytes(const std::string& relative) {
        const fs::path p = dir_ / relative;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) {
            fail(relative, "", "missing");
            return std::nullopt;
        }
        try {
            auto b = io::read_file(p);
            held();
            return b;
        } catch (const Error& e) {
            fail(relative, "", e.what());
            return std::nullopt;
        }
    }
    std::optional<Json> json(const std::string& relative, std::string* text = nullptr) {
        auto b = bytes(relative);
        if (!b) return std::nullopt;
        std::string t(b->begin(), b->end());
        try {
            Json j = io::parse_json_text<Json>(t);  // a key given twice, or nesting past 64, fails it
            if (!j.is_object()) throw std::runtime_error("not an object");
            if (text) *text = std::move(t);
            return j;
        } catch (const std::exception& e) {
            fail(relative, "", std::string("not a JSON object (") + e.what() + ")");
            return std::nullopt;
        }
    }

    VerifyOutcome out;

private:
    fs::path dir_;
};

// The keys a writer writes, as an object for Checker::nothing_else: any other key is a claim
// nothing backs. Each list is that of the file's writer (engine/qualify/qualification.cpp,
// protocol.cpp); a key added there and not here fails every fresh submission's verify, which the
// tests run.
Json keys_written(std::initializer_list<const char*> names) {
    Json j = Json::object();
    for (const char* n : names) j[n] = nullptr;
    return j;
}

std::string sha_of(const std::vector<std::uint8_t>& b) { return io::sha256_hex(b); }
std::string sha_of(const std::string& t) { return io::sha256_hex(t.data(), t.size()); }

// The protocol as protocol.json states it; nullopt (with failures) where it cannot be read.
std::optional<Protocol> protocol_from(Checker& c, const Json& j) {
    const std::string f = "protocol.json";
    Protocol p;
    // The keys the protocol is built from; a missing one is its failure line, and nothing more is checked.
    for (const char* key : {"config", "band_percent", "dataset_seeds"})
        if (!j.contains(key)) {
            c.fail(f, key, "missing");
            return std::nullopt;
        }
    const Json config = j["config"];
    try {
        p.config.update_from_json(nlohmann::json::parse(config.dump()));
        p.config.validate();
    } catch (const std::exception& e) {
        c.fail(f, "config", e.what());
        return std::nullopt;
    }
    const Json band = j["band_percent"];
    try {
        if (!band.is_string()) throw Error("band_percent must be a decimal string, got " + band.dump());
        p.band = protocol_band(band.get<std::string>(), "band_percent");  // the protocol's own, as qualify's
    } catch (const std::exception& e) {
        c.fail(f, "band_percent", e.what());
        return std::nullopt;
    }
    const Json seeds = j["dataset_seeds"];
    try {
        if (!seeds.is_array()) throw Error("not a list of seeds");
        check_draw_count(static_cast<std::int64_t>(seeds.size()), "the number of dataset_seeds");
        for (const Json& seed : seeds)
            if (!seed.is_number_unsigned()) throw Error("a seed is not a non-negative integer: " + seed.dump());
        p.first_seed = seeds[0].get<std::uint64_t>();
        p.draws = static_cast<int>(seeds.size());
        check_seed_range(p.first_seed, p.draws, "dataset_seeds[0]");
        for (int i = 0; i < p.draws; ++i)
            if (seeds[i].get<std::uint64_t>() != p.seed(i)) {
                c.fail(f, "dataset_seeds[" + std::to_string(i) + "]",
                       "the protocol's seeds follow one another; expected " + std::to_string(p.seed(i)));
                return std::nullopt;
            }
    } catch (const std::exception& e) {
        c.fail(f, "dataset_seeds", e.what());
        return std::nullopt;
    }
    if (j.contains("backend") && j["backend"].is_object() && j["backend"].contains("requested") &&
        j["backend"]["requested"].is_string())
        p.backend = j["backend"]["requested"].get<std::string>();
    p.together = false;
    c.equal(f, "learner_seed", c.at(f, j, "learner_seed", "learner_seed"), p.config.seed);
    c.equal(f, "draw_count", c.at(f, j, "draw_count", "draw_count"), p.draws);
    c.equal(f, "train_count", c.at(f, j, "train_count", "train_count"), data::kMediumTrain);
    c.equal(f, "test_count", c.at(f, j, "test_count", "test_count"), data::kMediumTest);
    c.equal(f, "total_count", c.at(f, j, "total_count", "total_count"), data::kMediumTest * p.draws);
    c.equal(f, "required_correct", c.at(f, j, "required_correct", "required_correct"),
            p.band.required_correct(data::kMediumTest * p.draws));
    c.equal(f, "per_draw_floor", c.at(f, j, "per_draw_floor", "per_draw_floor"),
            p.band.per_draw_floor(data::kMediumTest));
    return p;
}

}  // namespace

void VerifyRequest::check() const {
    if (backend && !retrain) throw Error("a backend only steers the retraining (retrain)");
    if (backend) backend_row(*backend);  // an unknown name, before any file is read
}

VerifyOutcome verify_submission(const VerifyRequest& request) {
    request.check();
    // What can fail before any file is read or drawn: the IDX files there, the backend that is to
    // retrain usable on this machine.
    find_idx(request.idx_dir, kTrainImagesStem);
    find_idx(request.idx_dir, kTrainLabelsStem);
    if (request.retrain && request.backend) make_backend(*request.backend);
    Checker c(request.submission);
    std::error_code ec;
    if (!fs::is_directory(request.submission, ec))
        throw Error(request.submission.string() + ": not a directory (the submission folder)");
    const auto say = [&](const std::string& line) {
        if (request.progress) request.progress(line);
    };

    std::string protocol_text, draw_manifest_text, prediction_manifest_text, accuracy_text;
    const auto protocol_j = c.json("protocol.json", &protocol_text);
    const auto draw_manifest = c.json("draw-manifest.json", &draw_manifest_text);
    const auto prediction_manifest = c.json("prediction-manifest.json", &prediction_manifest_text);
    const auto accuracy = c.json("accuracy.json", &accuracy_text);
    const auto readme = c.bytes("README.md");

    // The hash chain between the files.
    if (protocol_j && draw_manifest)
        c.equal("draw-manifest.json", "protocol_sha256",
                c.at("draw-manifest.json", *draw_manifest, "protocol_sha256", "protocol_sha256"),
                sha_of(protocol_text));
    if (prediction_manifest) {
        const std::string f = "prediction-manifest.json";
        if (protocol_j)
            c.equal(f, "protocol_sha256", c.at(f, *prediction_manifest, "protocol_sha256", "protocol_sha256"),
                    sha_of(protocol_text));
        if (draw_manifest)
            c.equal(f, "draw_manifest_sha256",
                    c.at(f, *prediction_manifest, "draw_manifest_sha256", "draw_manifest_sha256"),
                    sha_of(draw_manifest_text));
        c.equal(f, "test_labels_scored", c.at(f, *prediction_manifest, "test_labels_scored", "test_labels_scored"),
                false);
    }
    // Keys no writer writes, at the top of each file (accuracy.json's are checked with its claims).
    if (protocol_j)
        c.nothing_else("protocol.json", "", *protocol_j,
                       keys_written({"protocol", "config", "learner_seed", "dataset_seeds", "draw_count", "train_count",
                                     "test_count", "total_count", "band_percent", "required_correct", "per_draw_floor",
                                     "raw_sources", "official_mnist", "revgraph_version", "git_commit", "backend",
                                     "together", "frozen_at_utc"}));
    if (draw_manifest)
        c.nothing_else("draw-manifest.json", "", *draw_manifest, keys_written({"protocol_sha256", "draws"}));
    if (prediction_manifest)
        c.nothing_else("prediction-manifest.json", "", *prediction_manifest,
                       keys_written({"protocol_sha256", "draw_manifest_sha256", "draws", "test_labels_scored"}));
    if (prediction_manifest && accuracy)
        c.equal("accuracy.json", "prediction_manifest_sha256",
                c.at("accuracy.json", *accuracy, "prediction_manifest_sha256", "prediction_manifest_sha256"),
                sha_of(prediction_manifest_text));
    if (!protocol_j) return c.out;
    const auto protocol = protocol_from(c, *protocol_j);
    if (!protocol) return c.out;
    const Protocol& p = *protocol;
    // The protocol's backend retrains where none is named: usable here, before anything is drawn.
    if (request.retrain && !request.backend) make_backend(p.backend);

    // The raw sources against the IDX files at hand.
    say("reading " + request.idx_dir.string());
    const TrainingSet set = load_training_set(request.idx_dir);
    const Json sources = c.at("protocol.json", *protocol_j, "raw_sources", "raw_sources");
    const char* names[] = {"train_images", "train_labels"};
    for (int k = 0; k < 2; ++k) {
        const std::string key = std::string("raw_sources.") + names[k];
        const Json claimed = field(sources, names[k]);
        const Json derived = raw_source_json(set.checks[k]);
        if (field(claimed, "sha256") == derived["sha256"] || derived["official"] != true ||
            field(claimed, "official") != true) {
            for (const char* f : {"bytes", "md5", "sha256", "official"})
                c.equal("protocol.json", key + "." + f, field(claimed, f), derived[f]);
            continue;
        }
        // Another stored form of the official content (the raw file against the distributed .gz, or
        // the other way): the files at hand are official, and the claimed digests are an official
        // form's: the raw file's sha256 and size, the published .gz's md5, or a gzip whose content
        // is the raw file's.
        const io::OfficialMnistFile& o =
            io::official_mnist_file(k == 0 ? io::MnistFile::train_images : io::MnistFile::train_labels);
        const bool raw = field(claimed, "sha256") == o.raw_sha256 && field(claimed, "bytes") == o.raw_bytes;
        const bool gzip = field(claimed, "md5") == o.gzip_md5 || field(claimed, "decompressed_sha256") == o.raw_sha256;
        if (raw || gzip)
            c.held();
        else
            c.fail("protocol.json", key,
                   "claims official MNIST content, but its digests are no official form's (sha256 " +
                       shown(field(claimed, "sha256")) + ", md5 " + shown(field(claimed, "md5")) + ")");
    }
    c.equal("protocol.json", "official_mnist", c.at("protocol.json", *protocol_j, "official_mnist", "official_mnist"),
            set.official());

    // Each draw re-derived: indices, input hashes, labels.
    say("drawing " + std::to_string(p.draws) + " draws");
    std::vector<PreparedDraw> draws = prepare_draws(set.set, p, true);
    // A file's "draws": a list of one object per draw, else one failure line and its per-draw
    // claims unchecked (each entry that is an object is still checked).
    const auto draws_of = [&](const std::optional<Json>& doc, const std::string& file) -> Json {
        if (!doc) return nullptr;  // the file's own failure is recorded
        if (!doc->contains("draws")) {
            c.fail(file, "draws", "missing");
            return nullptr;
        }
        const Json list = (*doc)["draws"];
        if (!list.is_array() || static_cast<int>(list.size()) != p.draws) {
            c.fail(file, "draws",
                   "not a list of " + std::to_string(p.draws) + " objects (" +
                       (list.is_array() ? std::to_string(list.size()) + " entries" : list.dump()) + ")");
        } else {
            c.held();
        }
        return list;
    };
    const Json manifest_draws = draws_of(draw_manifest, "draw-manifest.json");
    const Json pm_draws = draws_of(prediction_manifest, "prediction-manifest.json");
    const Json acc_draws = draws_of(accuracy, "accuracy.json");
    // Entry i of such a list where it is an object, else null (a non-object entry is its own line).
    const auto entry = [&](const Json& list, const std::string& file, int i) -> Json {
        if (!list.is_array() || i >= static_cast<int>(list.size())) return nullptr;
        if (list[i].is_object()) return list[i];
        c.fail(file, "draws[" + std::to_string(i) + "]", "not an object (" + list[i].dump() + ")");
        return nullptr;
    };

    // A placeholder token: the labels here are freshly drawn by the verifier, which reads the
    // frozen predictions from disk; no learner sees them.
    const FrozenPredictions key = freeze_predictions({}, Json::object(), nullptr);
    std::vector<DrawScore> scores;
    bool all_scored = true;
    for (int i = 0; i < p.draws; ++i) {
        const PreparedDraw& d = draws[i];
        const std::string k = "draws[" + std::to_string(i) + "]";
        const std::string pf = predictions_file(i), rf = result_file(i);
        std::optional<std::vector<std::uint8_t>> npy;
        std::optional<std::vector<std::int64_t>> predictions;
        Json result_json;  // the draw's result as written, where it is a JSON value
        // The draw's claims; whatever a malformed file makes throw here is a failure line, never the end of verify.
        try {
            const Json m = entry(manifest_draws, "draw-manifest.json", i);
            if (!m.is_null()) {
                const Json derived = d.record.to_json();  // named: a temporary would die before the loop
                for (const auto& [name, value] : derived.items())
                    c.equal("draw-manifest.json", k + "." + name, field(m, name), value);
                c.nothing_else("draw-manifest.json", k + ".", m, derived);
            }
            // The files of the draw and their hashes in the prediction manifest.
            npy = c.bytes(pf);
            const auto result = c.bytes(rf);
            const Json pm = entry(pm_draws, "prediction-manifest.json", i);
            if (!pm.is_null()) {
                c.equal("prediction-manifest.json", k + ".index", field(pm, "index"), i);
                c.equal("prediction-manifest.json", k + ".predictions_file", field(pm, "predictions_file"), pf);
                c.equal("prediction-manifest.json", k + ".result_file", field(pm, "result_file"), rf);
                c.nothing_else(
                    "prediction-manifest.json", k + ".", pm,
                    keys_written({"index", "predictions_file", "predictions_sha256", "result_file", "result_sha256"}));
                // A file's sha256 against the manifest's claim for it (the failure names the file).
                const auto hash_claim = [&](const std::string& file, const auto& bytes, const std::string& key) {
                    if (!bytes) return;
                    const Json claimed = field(pm, key);
                    if (claimed != sha_of(*bytes))
                        c.fail(file, "sha256",
                               sha_of(*bytes) + " is not prediction-manifest.json " + k + "." + key + " " +
                                   shown(claimed));
                    else
                        c.held();
                };
                hash_claim(pf, npy, "predictions_sha256");
                hash_claim(rf, result, "result_sha256");
            }
            // The predictions, scored afresh.
            if (npy) {
                try {
                    const io::Array a = io::parse_npy(*npy, pf);
                    if (a.dtype != "<i8" || a.shape != std::vector<std::int64_t>{data::kMediumTest})
                        throw Error("not int64 (" + std::to_string(data::kMediumTest) + ",) but " + a.dtype + " " +
                                    io::Array::shape_string(a.shape));
                    predictions = a.as<std::int64_t>();
                    check_classes(std::span<const std::int64_t>(*predictions), pf, "prediction");
                } catch (const Error& e) {
                    std::string what = e.what();  // the reader names the file too: said once
                    if (what.rfind(pf + ": ", 0) == 0) what.erase(0, pf.size() + 2);
                    c.fail(pf, "", what);
                    predictions.reset();
                }
            }
            if (result) {
                Json r;
                try {
                    r = io::parse_json_text<Json>(std::string(result->begin(), result->end()));
                } catch (const std::exception& e) { c.fail(rf, "", std::string("not JSON (") + e.what() + ")"); }
                if (!r.is_null()) {
                    // As the engine reads a config: a result written before `width` existed lacks
                    // the key and means 82, as its protocol does.
                    Json claimed = field(r, "config");
                    try {
                        TaskConfig read;
                        read.update_from_json(nlohmann::json::parse(claimed.dump()));
                        claimed = read.to_json();
                    } catch (const std::exception&) {}  // not a config: compared as it is, and differs
                    c.equal(rf, "config", claimed, p.config.to_json());
                    c.equal(rf, "input_hashes", field(r, "input_hashes"), d.record.input_sha256);
                    if (predictions)
                        c.equal(rf, "predictions_sha256", field(r, "predictions_sha256"), io::sha256_hex(*predictions));
                    c.equal(rf, "backend", field(r, "backend"), field(field(*protocol_j, "backend"), "name"));
                    // A result is written before any label is read: a score in it was put there.
                    for (const char* scored : {"correct", "accuracy"})
                        if (r.contains(scored))
                            c.fail(rf, scored, "a result holds no score (the labels are read after it is frozen)");
                    result_json = r;
                }
            }
            if (predictions) {
                const DrawScore s = score_draw(d.record, *predictions, d.labels.open(key));
                scores.push_back(s);
                const Json a = entry(acc_draws, "accuracy.json", i);
                if (!a.is_null()) {
                    const double percent = 100.0 * double(s.correct) / double(s.total);
                    const Json derived = {{"index", s.index},
                                          {"dataset_seed", s.dataset_seed},
                                          {"correct", s.correct},
                                          {"total", s.total},
                                          {"accuracy_percent", percent},
                                          {"test_labels_sha256", s.test_labels_sha256}};
                    for (const auto& [name, value] : derived.items())
                        c.equal("accuracy.json", k + "." + name, field(a, name), value);
                    c.nothing_else("accuracy.json", k + ".", a, derived);
                }
            }
        } catch (const std::exception& e) {
            c.fail("draw " + std::to_string(i), "", std::string("cannot be checked (") + e.what() + ")");
            predictions.reset();
        }
        if (!predictions) {
            all_scored = false;
            continue;
        }
        if (request.retrain) {
            say("retraining draw " + std::to_string(i));
            PreparedTask task(d.inputs, p.config, make_backend(request.backend.value_or(p.backend), p.config));
            task.run();
            const TaskOutputs outputs = task.outputs();
            const auto fresh = io::serialize_npy(predictions_array(outputs.state.predictions));
            if (fresh != *npy)
                c.fail(pf, "retrain",
                       "a fresh training on " + task.backend().name() + " predicts other bytes (sha256 " +
                           sha_of(fresh) + ")");
            else
                c.held();
            // On the backend the result names, every hash it claims is the fresh run's (another
            // backend sums in its own order: its predictions are compared, nothing else).
            if (field(result_json, "backend") == task.backend().name())
                for (const auto& [name, value] : outputs.metadata.items())
                    if (name.size() > 7 && name.compare(name.size() - 7, 7, "_sha256") == 0)
                        c.equal(rf, name + " (retrain)", field(result_json, name), value);
        }
    }

    // The totals and the verdict, from the fresh scores.
    std::optional<Json> derived_accuracy;
    if (all_scored) {
        Scores s;
        s.draws = scores;
        s.verdict = verdict_of(scores, p.band);
        derived_accuracy = accuracy_json(s, p.band, set.official());
        // A folder written before published_protocol existed claims none: its qualified claim (now
        // also needing the published protocol) is checked all the same, and its README has no such
        // sentence to compare; as a result written before `width` reads as width 82.
        if (accuracy && accuracy->is_object() && !accuracy->contains("published_protocol"))
            derived_accuracy->erase("published_protocol");
    }
    if (accuracy && derived_accuracy) {
        const Json& derived = *derived_accuracy;
        for (const auto& [name, value] : derived.items()) {
            if (name == "draws") continue;
            if (value.is_object()) {
                const Json claimed = field(*accuracy, name);
                for (const auto& [sub, v] : value.items())
                    c.equal("accuracy.json", name + "." + sub, field(claimed, sub), v);
                c.nothing_else("accuracy.json", name + ".", claimed, value);
            } else {
                c.equal("accuracy.json", name, field(*accuracy, name), value);
            }
        }
        c.nothing_else("accuracy.json", "", *accuracy, derived, {"prediction_manifest_sha256"});
    }
    // README.md: its score table and verdict, line for line, as qualify renders them from the
    // re-derived scores. Its other lines (who made it when, the times, how to verify) are claims
    // no file can re-derive, and their wording may differ between revgraph versions.
    if (readme && derived_accuracy) {
        const auto scored = [](const std::string& text) {
            std::vector<std::string> lines;
            std::istringstream in(text);
            for (std::string line; std::getline(in, line);)
                if (line.rfind("| ", 0) == 0 || line.rfind("**Verdict.**", 0) == 0 ||
                    line.rfind("Sample standard deviation", 0) == 0)
                    lines.push_back(line);
            return lines;
        };
        try {
            const std::string text(readme->begin(), readme->end());
            if (scored(readme_text(*protocol_j, *derived_accuracy, {}, "")) == scored(text))
                c.held();
            else
                c.fail("README.md", "", "its score table or verdict is not what the re-derived scores give");
        } catch (const std::exception& e) {
            c.fail("README.md", "", std::string("cannot be rendered from the files (") + e.what() + ")");
        }
    }
    // Nothing but the submission's own files, and no link among them.
    std::set<std::string> expected = {"protocol.json", "draw-manifest.json", "prediction-manifest.json",
                                      "accuracy.json", "README.md",          "predictions",
                                      "results"};
    for (int i = 0; i < p.draws; ++i) expected.insert({predictions_file(i), result_file(i)});
    for (auto it = fs::recursive_directory_iterator(request.submission, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        const std::string relative = fs::path(it->path()).lexically_relative(request.submission).generic_string();
        if (it->is_symlink(ec))
            c.fail(relative, "", "a link: a submission holds plain files");
        else if (!expected.count(relative))
            c.fail(relative, "", "not a file of the submission");
    }
    return c.out;
}

}  // namespace revgraph::qualify
