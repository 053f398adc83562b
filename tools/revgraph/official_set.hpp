#pragma once
// What `revgraph data` and `revgraph qualify` share (defined in data.cpp): the official MNIST
// training set read from a directory of IDX files.
#include <filesystem>

#include "engine/io/idx.hpp"

namespace revgraph::cli {

// The training images and labels from DIR/train-images-idx3-ubyte and train-labels-idx1-ubyte (or
// their .gz); throws Error naming the file that is missing or malformed.
io::MnistSet read_official_training_set(const std::filesystem::path& dir);

}  // namespace revgraph::cli
