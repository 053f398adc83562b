#pragma once
// Shared helpers of the io suites: fixture paths, scratch directories, byte buffers.
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

namespace iotest {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

inline fs::path fixture(const std::string& name) {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    if (root == nullptr) throw revgraph::Error("REVGRAPH_SOURCE_ROOT is not set (run through meson test)");
    return fs::path(root) / "test" / "io" / "fixtures" / name;
}

inline Bytes fixture_bytes(const std::string& name) { return revgraph::io::read_file(fixture(name)); }

// A fresh directory under the system temp dir, removed with everything in it.
class ScratchDir {
public:
    ScratchDir() {
        std::string pattern = (fs::temp_directory_path() / "revgraph-io-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw revgraph::Error("mkdtemp failed");
        path_ = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const fs::path& path() const { return path_; }
    fs::path operator/(const std::string& name) const { return path_ / name; }
    std::vector<std::string> listing() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
        return names;
    }

private:
    fs::path path_;
};

inline Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// The one-line message of the revgraph::Error that f() throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const revgraph::Error& e) { return e.what(); }
    return "(no error)";
}

}  // namespace iotest
