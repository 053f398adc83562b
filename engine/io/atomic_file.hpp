#pragma once
// Whole-file reads, and writes that either replace the target completely or leave it as it
// was: the bytes go to a temporary file in the target's directory, are fsynced, and are then
// renamed over the target (rename is atomic within one file system). A crash or error part
// way leaves at most a hidden ".name.tmp-*" file behind, never a partial or stale output.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace revgraph::io {

// The whole file; throws Error naming the path when it cannot be read.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

// A staged output: write() any number of times, then commit() renames it over the target.
// Destroying it without commit() removes the temporary file and leaves the target untouched.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path target);  // creates the temporary file
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    AtomicFile(AtomicFile&& other) noexcept;
    AtomicFile& operator=(AtomicFile&&) = delete;

    void write(std::span<const std::uint8_t> bytes);
    void write(std::string_view text);
    // Flushes and fsyncs the temporary file and closes it; commit() calls it if needed.
    void finish();
    // Renames the temporary file over the target and fsyncs the directory.
    void commit();

    const std::filesystem::path& target() const { return target_; }
    const std::filesystem::path& temp_path() const { return temp_; }

private:
    std::filesystem::path target_;
    std::filesystem::path temp_;
    int fd_ = -1;
    bool committed_ = false;
    void discard() noexcept;
};

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// Several outputs or none of them: every file is written and fsynced to its temporary first
// (where disk-full, permission and similar errors happen), and only then are all renamed.
// Targets must be distinct and must not be directories. A rename can still fail after
// others succeeded only if the directories change under us; the error then says which
// targets were already replaced.
void write_files_atomic(
    const std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>>& files);

}  // namespace revgraph::io
