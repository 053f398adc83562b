// revgraph data: make input archives — MNIST-medium draws from the official IDX files
// (SPEC §9), or the embedded default task — with the query labels kept in a file of their own.
#include <filesystem>
#include <iostream>

#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/idx.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/task_files.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace revgraph::cli {
namespace {

std::filesystem::path find_idx(const std::filesystem::path& dir, const std::string& stem) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw Error(dir.string() + ": not a directory (--idx-dir)");
    for (const auto& name : {stem, stem + ".gz"}) {
        const auto p = dir / name;
        if (std::filesystem::exists(p, ec)) return p;
    }
    throw Error(dir.string() + ": no " + stem + " (or " + stem + ".gz) in this directory");
}

// Before any work: --output is given, and the outputs are distinct files in writable directories.
void check_outputs(const Args& args) {
    const auto output = args.get("output");
    if (!output) throw UsageError{"data: --output DRAW.npz is required"};
    std::vector<std::pair<std::string, std::string>> targets{{"--output", *output}};
    if (const auto labels = args.get("test-labels-output")) targets.push_back({"--test-labels-output", *labels});
    std::vector<std::pair<std::string, std::string>> inputs;  // the IDX files `data mnist` may read
    if (const auto dir = args.get("idx-dir"))
        for (const std::string stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"})
            for (const auto& name : {stem, stem + ".gz"}) inputs.push_back({"--idx-dir", (std::filesystem::path(*dir) / name).string()});
    require_distinct_writable_outputs(targets, inputs);
}

void write_draw(const data::TaskData& d, const Args& args) {
    const auto output = args.get("output");
    const TaskInputs inputs{d.train_images, d.train_labels, d.test_images};
    std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>> files;
    files.push_back({*output, io::serialize_npz(io::task_inputs_archive(inputs), {io::Compression::deflate})});
    if (const auto labels = args.get("test-labels-output"))
        files.push_back({*labels, io::serialize_npy(io::predictions_array(d.test_labels))});
    io::write_files_atomic(files);
    if (!args.flag("quiet"))
        std::cerr << "revgraph: wrote " << *output << " (" << d.train_count() << " train / " << d.test_count()
                  << " query)\n";
}

}  // namespace

io::MnistSet read_official_training_set(const std::filesystem::path& dir) {
    return io::read_mnist(find_idx(dir, "train-images-idx3-ubyte"), find_idx(dir, "train-labels-idx1-ubyte"));
}

int data_command(const std::vector<std::string>& argv) {
    if (argv.empty()) throw UsageError{"data: expected 'mnist' or 'embedded'"};
    const std::string kind = argv[0];
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
    const Args args(rest, {"idx-dir", "seed", "output", "test-labels-output", "split-seed"}, {"quiet"});
    if (!args.positional().empty()) throw UsageError{"data: unexpected argument '" + args.positional()[0] + "'"};
    if (kind == "mnist") {
        const auto dir = args.get("idx-dir");
        const auto seed = args.get("seed");
        if (!dir || !seed) throw UsageError{"data mnist: --idx-dir DIR and --seed S are required"};
        const auto s = static_cast<std::uint64_t>(parse_int("seed", *seed, 0, INT64_MAX));
        check_outputs(args);
        const auto set = read_official_training_set(*dir);
        write_draw(data::mnist_medium_draw(set.images.pixels, set.labels, s), args);
        return 0;
    }
    if (kind == "embedded") {
        const auto s = args.get("split-seed")
                           ? static_cast<std::uint64_t>(parse_int("split-seed", *args.get("split-seed"), 0, INT64_MAX))
                           : data::kEmbeddedSplitSeed;
        check_outputs(args);
        write_draw(data::embedded_default_task(s), args);
        return 0;
    }
    throw UsageError{"data: unknown kind '" + kind + "' (expected mnist or embedded)"};
}

}  // namespace revgraph::cli
