#pragma once
// Loads test/data/vectors.json (made by make_vectors.py with numpy) from the source tree.
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace revgraph::test {

inline const nlohmann::json& data_vectors() {
    static const nlohmann::json vectors = [] {
        const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
        const std::string path = std::string(root ? root : ".") + "/test/data/vectors.json";
        std::ifstream in(path);
        if (!in) throw std::runtime_error("cannot open " + path);
        return nlohmann::json::parse(in);
    }();
    return vectors;
}

}  // namespace revgraph::test
