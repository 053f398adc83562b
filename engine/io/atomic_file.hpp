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
// Only regular files are replaced: a target that is a directory, a device (/dev/null), a fifo
// or a socket is refused at construction with "cannot write PATH: it is ..., not a regular
// file". A symlink is written through (resolve_output in file_identity.hpp, the same rule the
// duplicate-output check uses): the file it points to is replaced and the link stays; a link
// to something other than a regular file is refused like that thing. Temporaries that a killed
// writer left beside the target (".NAME.tmp-PID-HOST-*" of a process of this machine that no longer runs) are
// removed when the next writer of that target starts.
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

    const std::filesystem::path& target() const { return target_; }      // as the caller named it
    const std::filesystem::path& resolved() const { return resolved_; }  // where it is written
    const std::filesystem::path& temp_path() const { return temp_; }

private:
    std::filesystem::path target_;
    std::filesystem::path resolved_;
    std::filesystem::path temp_;
    int fd_ = -1;
    bool committed_ = false;
    void discard() noexcept;
};

// What a writer stages beside its target `resolved` (a path as resolve_output gives it) is named
// ".NAME.tmp-PID-HOST-SUFFIX", NAME the target's file name, PID the writer's process and HOST a tag
// of its machine: AtomicFile's files and the submission folder of engine/qualify alike.
// temporary_prefix is ".NAME.tmp-PID-HOST-" for this process; remove_stale_temporaries removes
// such entries of this machine's processes that no longer run (regular files; with `folders`,
// directories too, with what they hold), which a kill between staging and rename leaves behind.
std::string temporary_prefix(const std::filesystem::path& resolved);
void remove_stale_temporaries(const std::filesystem::path& resolved, bool folders) noexcept;

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// Several outputs or none of them: every file is written and fsynced to its temporary first
// (where disk-full, permission and similar errors happen), and only then are all renamed.
// Targets must be distinct and must not be directories. A rename can still fail after
// others succeeded only if the directories change under us; the error then says which
// targets were already replaced.
void write_files_atomic(const std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>>& files);

// A result set with one commit point. `data` (predictions, state) are described by `result`
// (RESULT.json, holding their hashes); the invariant, after a kill at any moment, is: a result
// file on disk describes the data files beside it. The steps:
//   1. every file is written and fsynced to its temporary (nothing visible changes);
//   2. an existing result file is removed (the directory fsynced): from here until step 4
//      there is no result file, so none can describe a half-replaced set;
//   3. the data files are renamed over their targets, one by one (each directory fsynced);
//   4. the result file is renamed into place: the commit point.
// A kill before step 2 leaves the earlier set untouched; after it, the earlier data files are
// intact until each is replaced in step 3, but no result file claims them. Temporaries of a
// killed writer are removed by the next one (see AtomicFile).
void write_result_set(const std::filesystem::path& result, const std::vector<std::uint8_t>& result_bytes,
                      const std::vector<std::pair<std::filesystem::path, std::vector<std::uint8_t>>>& data);

// Tests only: called after each step above that changes the disk (a temporary fsynced, a file
// removed or renamed), with its number from 1; a test kills the process there to check the
// invariant. Not thread-safe; null (the default) does nothing.
void set_commit_step_hook(void (*hook)(int step));

}  // namespace revgraph::io
