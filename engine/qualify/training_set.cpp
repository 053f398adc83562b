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

io::MnistSet read_official_training_set(const std::filesystem::path& dir) {
    // Images first, then labels, so a missing file is named in that order (argument order is unspecified).
    const auto images = find_idx(dir, "train-images-idx3-ubyte");
    const auto labels = find_idx(dir, "train-labels-idx1-ubyte");
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
