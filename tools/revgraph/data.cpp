// revgraph data: make input archives — MNIST-medium draws from the official IDX files
// (docs/spec.md §9), or the embedded default task — with the query labels kept in a file of their own.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/idx.hpp"
#include "engine/io/mnist_official.hpp"
#include "engine/io/npz.hpp"
#include "engine/task_files.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"
#include "tools/revgraph/official_set.hpp"

namespace revgraph::cli {

namespace {

struct DataOptions {
    std::optional<std::string> idx_dir, seed, output, test_labels_output, split_seed;
    bool quiet = false;
};

// Before any work: the outputs are distinct files in writable directories, and none is one of the
// IDX files `data mnist` reads.
void check_outputs(const DataOptions& o) {
    NamedPaths targets{{"--output", *o.output}};
    if (o.test_labels_output) targets.push_back({"--test-labels-output", *o.test_labels_output});
    require_distinct_writable_outputs(targets, o.idx_dir ? idx_inputs(*o.idx_dir) : NamedPaths{});
}

void write_draw(const data::TaskData& d, const DataOptions& o) {
    const TaskInputs inputs{d.train_images, d.train_labels, d.test_images};
    std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>> files;
    files.push_back({*o.output, io::serialize_npz(task_inputs_archive(inputs), {io::Compression::deflate})});
    if (o.test_labels_output)
        files.push_back({*o.test_labels_output, io::serialize_npy(predictions_array(d.test_labels))});
    io::write_files_atomic(files);
    if (!o.quiet)
        std::cerr << "revgraph: wrote " << *o.output << " (" << d.train_count() << " train / " << d.test_count()
                  << " query)\n";
}

int data_mnist(const DataOptions& o) {
    const std::uint64_t s = parse_uint64("seed", *o.seed);  // any of the engine's seeds, as Python's
    check_outputs(o);
    const auto set = read_official_training_set(*o.idx_dir);
    const auto checks = check_official_mnist(set);
    const auto draw = data::mnist_medium_draw(set.images.pixels, set.labels, s);
    report_official_mnist(checks, o.quiet);  // once nothing can fail but the write: an error stays one line
    write_draw(draw, o);
    return 0;
}

int data_embedded(const DataOptions& o) {
    const std::uint64_t s = o.split_seed ? parse_uint64("split-seed", *o.split_seed) : data::kEmbeddedSplitSeed;
    check_outputs(o);
    write_draw(data::embedded_default_task(s), o);
    return 0;
}

void add_outputs(CLI::App& sub, DataOptions& o) {
    sub.add_option("--output", o.output, "the draw: train_images, train_labels, test_images (no query labels)")
        ->type_name("DRAW.npz")
        ->required()
        ->check(kNonEmpty);
    sub.add_option("--test-labels-output", o.test_labels_output, "the query labels, in a file of their own")
        ->type_name("L.npy")
        ->check(kNonEmpty);
    sub.add_flag("--quiet", o.quiet, "no progress lines on stderr");
}

}  // namespace

bool report_official_mnist(const std::vector<io::IdxFileCheck>& checks, bool quiet) {
    bool official = true;
    std::string why;
    for (const auto& c : checks) {
        if (!quiet)
            std::cerr << "revgraph: " << c.path << ": md5 " << c.md5 << ", sha256 " << c.sha256
                      << (c.official ? " (the official MNIST file)" : " (not the official MNIST file)") << "\n";
        if (!c.official)
            why += (why.empty() ? "" : "; ") + std::filesystem::path(c.path).filename().string() + ": " + c.reason;
        official = official && c.official;
    }
    // Said even under --quiet: it changes what the output means.
    if (!official)
        std::cerr << "revgraph: warning: these IDX files are NOT the official MNIST training files (" << why << ")\n";
    return official;
}

std::vector<Command> add_data_commands(CLI::App& app) {
    CLI::App* data =
        app.add_subcommand("data", "make input archives (with the query labels kept in a file of their own)");
    auto mnist = std::make_shared<DataOptions>();
    CLI::App* m = data->add_subcommand(
        "mnist", "an MNIST-medium draw from the MNIST training IDX files: 10,000 train / 10,000 query, resized to 9x9");
    m->add_option("--idx-dir", mnist->idx_dir,
                  "holds train-images-idx3-ubyte and train-labels-idx1-ubyte (or their .gz); their md5 and "
                  "sha256 are printed and compared with the official files'")
        ->type_name("DIR")
        ->required()
        ->check(kNonEmpty);
    m->add_option("--seed", mnist->seed, "the draw's seed")->type_name("S")->required()->check(kNonEmpty);
    add_outputs(*m, *mnist);
    auto embedded = std::make_shared<DataOptions>();
    CLI::App* e = data->add_subcommand("embedded", "the embedded default task (10,000 real digits, split in two)");
    e->add_option("--split-seed", embedded->split_seed, "another split of the same digits")
        ->type_name("S")
        ->check(kNonEmpty);
    add_outputs(*e, *embedded);
    return {{m, [mnist] { return data_mnist(*mnist); }}, {e, [embedded] { return data_embedded(*embedded); }}};
}

}  // namespace revgraph::cli
