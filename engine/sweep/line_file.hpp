#pragma once
// The sweep's output file, appended to one whole line at a time: each line goes out in a single
// write() (a reader sees it whole or not at all; a write cut short is taken back), and sync()
// makes the lines so far durable. An exclusive lock keeps a second sweep from writing the same
// file at the same time.
#include <cstdint>
#include <filesystem>
#include <string>

namespace revgraph::sweep {

class LineFile {
public:
    // Opens `path` for appending, creating it if missing; throws Error when it cannot, or when
    // another process holds it (a sweep already writing it).
    explicit LineFile(std::filesystem::path path);
    ~LineFile();
    LineFile(const LineFile&) = delete;
    LineFile& operator=(const LineFile&) = delete;

    // What the file held when opened.
    const std::string& initial_content() const { return initial_; }
    // Cuts the file to `size` bytes (an interrupted sweep's partial last line).
    void truncate(std::uint64_t size);
    // One line, '\n' included, in one write.
    void append(const std::string& line);
    // fdatasync; the first also syncs the directory of a file this object created.
    void sync();

private:
    std::filesystem::path path_;
    int fd_ = -1;
    bool created_ = false;
    std::uint64_t size_ = 0;
    std::string initial_;
};

}  // namespace revgraph::sweep
