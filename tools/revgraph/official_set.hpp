#pragma once
// What `revgraph data` and `revgraph qualify` share (defined in data.cpp): the official MNIST
// training set read from a directory of IDX files, and whether those files are the official ones.
#include <filesystem>
#include <vector>

#include "engine/io/idx.hpp"
#include "engine/io/mnist_official.hpp"

namespace revgraph::cli {

// The training images and labels from DIR/train-images-idx3-ubyte and train-labels-idx1-ubyte (or
// their .gz), each read once; throws Error naming the file that is missing or malformed.
io::MnistSet read_official_training_set(const std::filesystem::path& dir);

// Each file of the set read against the official MNIST files' sums (mnist_official.hpp), from the
// digests taken while it was read: {train_images, train_labels}.
std::vector<io::IdxFileCheck> check_official_mnist(const io::MnistSet& set);
// Prints each file's verdict, and a warning (even when quiet) where they are not the official
// files; returns whether both are.
bool report_official_mnist(const std::vector<io::IdxFileCheck>& checks, bool quiet);

}  // namespace revgraph::cli
