// A sweep's lines and files: format, resume, merge, the output lock (engine/sweep/), and the
// runner's results against each point run on its own through PreparedTask::run().
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/sha256.hpp"
#include "engine/sweep/jsonl.hpp"
#include "engine/sweep/line_file.hpp"
#include "engine/sweep/progress.hpp"
#include "engine/sweep/runner.hpp"
#include "engine/task.hpp"
#include "test/io/util.hpp"

using namespace revgraph;
using namespace revgraph::sweep;

namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

struct Small {
    TaskInputs inputs;
    std::vector<std::int64_t> labels;
    Small() {
        auto d = data::synthetic_task(19, 7, 1234);
        inputs = TaskInputs{d.train_images, d.train_labels, d.test_images};
        labels = d.test_labels;
    }
};

SweepJob job_for(const Small& s, const std::filesystem::path& out, unsigned jobs, Shard shard = {}) {
    TaskConfig base;
    base.batch_size = 5;
    SweepJob job;
    job.inputs = &s.inputs;
    job.test_labels = s.labels;
    job.grid = Grid::parse(base, {"seed=1..3", "depth=1,2"});
    job.shard = shard;
    job.jobs = jobs;
    job.backend = "cpu";
    job.output = out;
    return job;
}

}  // namespace

TEST_CASE("sweep lines: each point's hashes are those of the point run alone, whatever the jobs") {
    Small s;
    iotest::ScratchDir dir;
    for (unsigned jobs : {1u, 2u, 4u}) {
        CAPTURE(jobs);
        const auto out = dir / ("j" + std::to_string(jobs) + ".jsonl");
        const SweepJob job = job_for(s, out, jobs);
        const auto summary = run_sweep(job);
        CHECK(summary.ran == 6);
        CHECK(summary.skipped == 0);
        const Lines lines = split_lines(slurp(out));
        REQUIRE(lines.complete.size() == 6);
        CHECK(lines.partial.empty());
        for (std::size_t i = 0; i < 6; ++i) {
            const auto j = nlohmann::json::parse(lines.complete[i]);
            PreparedTask solo(s.inputs, job.grid.point(i), make_backend("cpu"));
            solo.run();
            const auto out_solo = solo.outputs();
            std::int64_t correct = 0;
            for (std::size_t q = 0; q < s.labels.size(); ++q) correct += out_solo.state.predictions[q] == s.labels[q];
            CHECK(j["index"] == i);
            CHECK(j["points"] == 6);
            CHECK(j["config"] == nlohmann::json(out_solo.metadata["config"]));  // metadata is ordered_json
            CHECK(j["correct"] == correct);
            CHECK(j["total"] == 7);
            CHECK(j["accuracy"].get<double>() == double(correct) / 7.0);
            for (const char* key : {"predictions_sha256", "scores_sha256", "state_vector_sha256",
                                    "final_parameter_sha256", "final_velocity_sha256", "non_finite_score_rows"})
                CHECK(j[key] == nlohmann::json(out_solo.metadata[key]));
            CHECK(j["run_seconds"].get<double>() >= 0);
            CHECK(lines.complete[i].rfind(",\"run_seconds\":") != std::string::npos);
        }
    }
    CHECK(without_times(slurp(dir / "j1.jsonl")) != slurp(dir / "j1.jsonl"));
    // Times aside, the files are one.
    const auto strip = [&](const std::string& name) {
        std::string all;
        for (const auto& l : split_lines(slurp(dir / name)).complete) all += without_times(l) + "\n";
        return all;
    };
    CHECK(strip("j1.jsonl") == strip("j2.jsonl"));
    CHECK(strip("j1.jsonl") == strip("j4.jsonl"));
}

TEST_CASE("sweep resume: a file cut mid-line is completed to the uninterrupted sweep; others are refused") {
    Small s;
    iotest::ScratchDir dir;
    const auto full = dir / "full.jsonl";
    run_sweep(job_for(s, full, 2));
    const std::string whole = slurp(full);
    const auto strip = [](const std::string& text) {
        std::string all;
        for (const auto& l : split_lines(text).complete) all += without_times(l) + "\n";
        return all;
    };
    const auto second_line_end = whole.find('\n', whole.find('\n') + 1);
    for (std::size_t cut : {std::size_t(0), std::size_t(5), whole.find('\n') + 1, second_line_end + 40, whole.size()}) {
        CAPTURE(cut);
        const auto part = dir / "part.jsonl";
        spit(part, whole.substr(0, cut));
        const auto summary = run_sweep(job_for(s, part, 2));
        CHECK(summary.skipped == split_lines(whole.substr(0, cut)).complete.size());
        CHECK(summary.skipped + summary.ran == 6);
        const std::string resumed = slurp(part);
        CHECK(strip(resumed) == strip(whole));
        CHECK(split_lines(resumed).partial.empty());
        // The lines it kept are the very bytes it found.
        const std::string kept = whole.substr(0, whole.rfind('\n', cut == 0 ? 0 : cut - 1) + (cut == 0 ? 0 : 1));
        if (cut > whole.find('\n')) CHECK(resumed.rfind(kept, 0) == 0);
    }
    // Not this sweep's lines: refused, the file left as it was.
    for (const std::string& foreign : {std::string("hello\n"), std::string("{\"index\":0}\n"), std::string("hello"),
                                       whole + whole.substr(0, whole.find('\n') + 1)}) {
        const auto other = dir / "other.jsonl";
        spit(other, foreign);
        CHECK_THROWS_AS(run_sweep(job_for(s, other, 2)), Error);
        CHECK(slurp(other) == foreign);
    }
    // Another shard's file, or another grid's.
    const auto shard1 = dir / "shard1.jsonl";
    run_sweep(job_for(s, shard1, 2, Shard{1, 2}));
    const std::string shard_text = slurp(shard1);
    CHECK_THROWS_AS(run_sweep(job_for(s, shard1, 2, Shard{0, 2})), Error);
    auto other_grid = job_for(s, full, 2);
    other_grid.grid = Grid::parse(TaskConfig{}, {"seed=1..6"});
    CHECK_THROWS_AS(run_sweep(other_grid), Error);
    CHECK(slurp(full) == whole);
    CHECK(slurp(shard1) == shard_text);
}

TEST_CASE("sweep merge: shards in any order give the unsharded file, times aside") {
    Small s;
    iotest::ScratchDir dir;
    run_sweep(job_for(s, dir / "all.jsonl", 1));
    std::vector<std::pair<std::string, std::string>> shards;
    for (std::size_t i : {2u, 0u, 3u, 1u}) {  // 6 points in 4 shards: shards 2 and 3 get one point each
        const auto p = dir / ("s" + std::to_string(i));
        run_sweep(job_for(s, p, 2, Shard{i, 4}));
        shards.emplace_back(p.string(), slurp(p));
    }
    const std::string merged = merge_shards(shards);
    const std::string all = slurp(dir / "all.jsonl");
    const auto strip = [](const std::string& text) {
        std::string out;
        for (const auto& l : split_lines(text).complete) out += without_times(l) + "\n";
        return out;
    };
    CHECK(strip(merged) == strip(all));
    CHECK(merged.size() > 0);
    // A shard given twice is harmless; a missing or unfinished one is not.
    auto twice = shards;
    twice.push_back(shards[0]);
    CHECK(merge_shards(twice) == merged);
    CHECK_THROWS_AS(merge_shards({shards[0], shards[1], shards[2]}), Error);
    auto cut = shards;
    cut[0].second.pop_back();
    CHECK_THROWS_AS(merge_shards(cut), Error);
    // One point, two different results.
    auto forged = shards;
    const auto at = forged[0].second.find("\"predictions_sha256\":\"") + 22;
    forged[0].second[at] = forged[0].second[at] == '0' ? '1' : '0';
    forged.push_back(shards[0]);
    CHECK_THROWS_AS(merge_shards(forged), Error);
    CHECK_THROWS_AS(merge_shards({{"x", "not json\n"}}), Error);
    CHECK_THROWS_AS(merge_shards({{"x", ""}}), Error);
    // A shard of another grid of as many points, on the same backend and inputs: its lines would
    // fill the missing points, and only the grid's digest tells them apart.
    auto other = job_for(s, dir / "other1", 2, Shard{1, 4});
    other.grid = Grid::parse(other.grid.base(), {"seed=11..13", "depth=1,2"});
    run_sweep(other);
    auto mixed = shards;
    for (auto& [name, text] : mixed)
        if (name == (dir / "s1").string()) text = slurp(dir / "other1");
    CHECK_THROWS_WITH_AS(merge_shards(mixed), doctest::Contains("is from another sweep than"), Error);
}

TEST_CASE("line file: whole lines, one writer at a time") {
    iotest::ScratchDir dir;
    const auto p = dir / "f.jsonl";
    {
        LineFile f(p);
        CHECK(f.initial_content().empty());
        f.append("{\"a\":1}\n");
        CHECK_THROWS_AS(LineFile{p}, Error);  // locked by f
        f.sync();
    }
    LineFile g(p);
    CHECK(g.initial_content() == "{\"a\":1}\n");
    g.truncate(3);
    g.append("x\n");
    CHECK(slurp(p) == "{\"ax\n");
    CHECK_THROWS_AS(LineFile{dir.path()}, Error);  // a directory
}

TEST_CASE("progress: bar, line, durations") {
    CHECK(human_duration(5) == "5s");
    CHECK(human_duration(185) == "3m05s");
    CHECK(human_duration(7260) == "2h01m");
    const Progress none{3, 12, 0, 0.0};
    CHECK(progress_line(none) == "sweep: 3/12 points, ? points/s, ETA ?");
    const Progress some{6, 12, 3, 1.5};  // 2 points/s, 6 left
    CHECK(progress_line(some) == "sweep: 6/12 points, 2.0 points/s, ETA 3s");
    CHECK(progress_bar(some, 10) == "[#####.....] 6/12 points  2.0 points/s  ETA 3s");
}

TEST_CASE("hashed inputs: a task built from them reports what it would have computed itself") {
    Small s;
    const HashedInputs hashed(s.inputs);
    TaskConfig c;
    c.batch_size = 5;
    PreparedTask plain(s.inputs, c, make_backend("cpu"));
    PreparedTask reused(hashed, c, make_backend("cpu"));
    plain.run();
    reused.run();
    auto a = plain.outputs().metadata;
    auto b = reused.outputs().metadata;
    CHECK(b["input_hashes"] == a["input_hashes"]);
    CHECK(b["input_hashes"]["train_images"] == io::sha256_hex(s.inputs.train_images));
    // Not compared: the times, the device line, and created_utc (the two runs may end in different seconds).
    for (const char* timing :
         {"preparation_seconds", "training_prediction_seconds", "run_seconds", "device", "created_utc"}) {
        a.erase(timing);
        b.erase(timing);
    }
    CHECK(a == b);
    std::vector<std::int64_t> labels(s.inputs.train_labels.begin(), s.inputs.train_labels.end());
    labels[0] = 10;
    const TaskInputs broken{{s.inputs.train_images.begin(), s.inputs.train_images.end()},
                            std::move(labels),
                            {s.inputs.test_images.begin(), s.inputs.test_images.end()}};
    CHECK_THROWS_AS(HashedInputs{broken}, Error);
}
