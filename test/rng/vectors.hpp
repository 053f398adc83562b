#pragma once
// Loads a JSON test vector from test/vectors/<name>.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "engine/io/sha256.hpp"

namespace revgraph::test {

inline std::filesystem::path source_root() {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    REQUIRE_MESSAGE(root != nullptr, "REVGRAPH_SOURCE_ROOT is not set (run through meson test)");
    return root;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path.string());
    return nlohmann::json::parse(in);
}

inline nlohmann::json load_vector(const std::string& name) {
    return read_json(source_root() / "test" / "vectors" / name);
}

template <typename T>
std::string hash_of(const T* data, std::size_t count) {
    return revgraph::io::sha256_hex(data, count * sizeof(T));
}

template <typename T>
std::string hash_of(const std::vector<T>& v) {
    return revgraph::io::sha256_hex(v);
}

}  // namespace revgraph::test
