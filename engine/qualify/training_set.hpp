#pragma once
// The MNIST training set a qualification draws from: a directory holding train-images-idx3-ubyte
// and train-labels-idx1-ubyte (or their .gz), read, and each file checked against the official
// MNIST files. Shared by `revgraph data mnist`, `qualify`, `verify` and Python.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/idx.hpp"
#include "engine/io/mnist_official.hpp"

namespace revgraph::qualify {

// The two files by name, each found as STEM or STEM.gz (in that order).
inline constexpr const char* kTrainImagesStem = "train-images-idx3-ubyte";
inline constexpr const char* kTrainLabelsStem = "train-labels-idx1-ubyte";

// DIR/stem, else DIR/stem.gz; throws Error when DIR is not a directory or neither exists.
std::filesystem::path find_idx(const std::filesystem::path& dir, const std::string& stem);

// Both files under every name find_idx may take for them, images first: what a command's outputs
// must not be.
std::vector<std::filesystem::path> training_set_names(const std::filesystem::path& dir);

// The training images and labels; throws Error naming the file that is missing or malformed.
io::MnistSet read_official_training_set(const std::filesystem::path& dir);

// Each of the two files against the official MNIST ones (mnist_official.hpp), from the digests
// taken while it was read: images first, then labels.
std::vector<io::IdxFileCheck> check_official_mnist(const io::MnistSet& set);

struct TrainingSet {
    io::MnistSet set;
    std::vector<io::IdxFileCheck> checks;  // train_images, train_labels
    bool official() const;                 // both files are the official ones
};
TrainingSet load_training_set(const std::filesystem::path& dir);

}  // namespace revgraph::qualify
