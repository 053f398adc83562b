#pragma once
// What `revgraph data` and `revgraph qualify` share: the official MNIST training set read from a
// directory of IDX files, and whether those files are the official ones (printed here, in data.cpp).
#include <filesystem>
#include <vector>

#include "engine/io/idx.hpp"
#include "engine/io/mnist_official.hpp"
#include "engine/qualify/training_set.hpp"

namespace revgraph::cli {

// The training set and the official-file checks live in the engine (engine/qualify/training_set.hpp).
using qualify::check_official_mnist;
using qualify::read_official_training_set;

// Prints each file's verdict, and a warning (even when quiet) where they are not the official
// files; returns whether both are.
bool report_official_mnist(const std::vector<io::IdxFileCheck>& checks, bool quiet);

}  // namespace revgraph::cli
