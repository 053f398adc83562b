#pragma once
// Which file a path names, however it is spelled: "r.json", "./r.json", "../x/r.json", a
// symlinked directory, a symlink to the file or a hard link all name one file. Used to refuse,
// before any work, an output that would replace an input or another output; AtomicFile resolves
// its target with the same resolve_output(), so the check and the writer agree on links.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.hpp"

namespace revgraph::io {

// Links are written through: an output path that is a symlink (or a chain of them) stands for the
// file it finally points to, which is replaced (a dangling link: created where it points), and the
// link is left as it is. Directories on the way are resolved too. Throws Error for a link loop.
std::filesystem::path resolve_output(const std::filesystem::path& path);

// "" for a regular file or a path that does not exist yet; otherwise what the file is ("a
// directory", "a character device", "a fifo", ...), which an output may never replace. Links
// are followed by the kernel, so /dev/stdout (a link to /proc/self/fd/1) is what fd 1 is.
std::string non_regular_kind(const std::filesystem::path& path);

// Throws Error "cannot write PATH: it is a character device, not a regular file (...)" (or "it
// is a directory") unless `path` is a regular file, a link to one, or does not exist yet.
void require_regular_or_new(const std::filesystem::path& path);

// A path together with the option that named it ("--output"), for messages.
struct NamedPath {
    std::string what;
    std::filesystem::path path;
};

// Thrown by require_distinct_files: a usage mistake rather than bad data.
class SameFileError : public Error {
public:
    using Error::Error;
};

// Throws SameFileError when an output is the same file as an input or an earlier output: equal
// device and inode once links are followed (files that exist), or equal resolved paths (files
// that do not exist yet). Inputs that do not exist are skipped: reading them fails anyway.
// Each output must also pass require_regular_or_new (an Error, not a SameFileError).
void require_distinct_files(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

// Throws Error "cannot write PATH: directory DIR does not exist" (or "... is not writable", or
// "cannot write PATH: it is a directory") where an output could not be written, so that a long
// run fails before its work rather than after it.
void require_writable_directory(const std::filesystem::path& output);

// Every front end's check of its outputs before any work (the command's, the Python harness's):
// require_distinct_files, then require_writable_directory for each output. `inputs` are every file
// the work reads; the running program's own file counts as one.
void require_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

}  // namespace revgraph::io
