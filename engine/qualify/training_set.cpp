#include "engine/qualify/training_set.hpp"

#include <algorithm>

#include "engine/error.hpp"

namespace revgraph::qualify {

std::filesystem::path find_idx(const std::filesystem::path& dir, const std::string& stem) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw Error(dir.string() + ": not a directory (the folder of the MNIST IDX files)");
    for (const auto& name : {stem, stem + ".gz"}) {
        const auto p = dir / name;
        if (std::filesystem::exists(p, ec)) return p;
    }
    throw Error(dir.string() + ": no " + stem + " (or " + stem + ".gz) in this directory");
}

std::vector<std::filesystem::path> training_set_names(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> names;
    for (const std::string stem : {kTrainImagesStem, kTrainLabelsStem})
        for (const auto& name : {stem, stem + ".gz"}) names.push_back(dir / name);
    return names;
}

io::MnistSet read_official_training_set(const std::filesystem::path& dir) {
    // Images first, then labels, so a missing file is named in that order (argument order is unspecified).
    const auto images = find_idx(dir, kTrainImagesStem);
    const auto labels = find_idx(dir, kTrainLabelsStem);
    return io::read_mnist(images, labels);
}

std::vector<io::IdxFileCheck> check_official_mnist(const io::MnistSet& set) {
    return {io::check_official_mnist(set.images.digests, io::MnistFile::train_images),
            io::check_official_mnist(set.labels_digests, io::MnistFile::train_labels)};
}

bool TrainingSet::official() const {
    return !checks.empty() && std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.official; });
}

TrainingSet load_training_set(const std::filesystem::path& dir) {
    TrainingSet t;
    t.set = read_official_training_set(dir);  // each file read once, hashed as it is read
    t.checks = check_official_mnist(t.set);
    return t;
}

}  // namespace revgraph::qualify
