#include "engine/qualify/submission.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

namespace revgraph::qualify {

namespace fs = std::filesystem;

namespace {

void fsync_path(const fs::path& p, int flags) {
    const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + p.string() + ": " + std::strerror(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw Error("cannot sync " + p.string() + ": " + std::strerror(err));
}

fs::path parent_of(const fs::path& out) {
    const fs::path abs = fs::absolute(out).lexically_normal();
    fs::path name = abs.filename();
    return name.empty() ? abs.parent_path().parent_path() : abs.parent_path();  // "OUT/" names OUT
}

fs::path name_of(const fs::path& out) {
    const fs::path abs = fs::absolute(out).lexically_normal();
    return abs.filename().empty() ? abs.parent_path().filename() : abs.filename();
}

}  // namespace

void check_submission_target(const fs::path& out) {
    std::error_code ec;
    const fs::path parent = parent_of(out);
    if (!fs::is_directory(parent, ec))
        throw Error("cannot write " + out.string() + ": directory " + parent.string() + " does not exist");
    if (::access(parent.c_str(), W_OK) != 0)
        throw Error("cannot write " + out.string() + ": directory " + parent.string() + " is not writable");
    const auto status = fs::symlink_status(out, ec);
    if (ec || status.type() == fs::file_type::not_found) return;
    if (status.type() != fs::file_type::directory)
        throw Error("cannot write the submission " + out.string() + ": it exists and is not a directory");
    if (!fs::is_empty(out, ec) || ec)
        throw Error("cannot write the submission " + out.string() +
                    ": the directory is not empty (a submission is never written into an existing one)");
}

SubmissionWriter::SubmissionWriter(fs::path out) : out_(std::move(out)) {
    check_submission_target(out_);
    // A fresh name of its own (as mkdtemp, but with the usual mode): two writers, even of one target
    // in one process, never share a folder, and no folder a live writer made is touched. The name
    // carries the PID and the machine, as AtomicFile's temporaries do, so that the folder a killed
    // run left is removed by the next run beside it on that machine.
    const fs::path target = parent_of(out_) / name_of(out_);
    io::remove_stale_temporaries(target, true);
    std::random_device entropy;
    const std::string base = io::temporary_prefix(target);
    for (int attempt = 0;; ++attempt) {
        char suffix[17];
        std::snprintf(suffix, sizeof suffix, "%08x%08x", entropy(), entropy());
        temp_ = parent_of(out_) / (base + suffix);
        if (::mkdir(temp_.c_str(), 0777) == 0) return;
        if (errno != EEXIST || attempt == 99)
            throw Error("cannot create " + temp_.string() + ": " + std::strerror(errno));
    }
}

SubmissionWriter::~SubmissionWriter() {
    if (committed_ || temp_.empty()) return;  // only the folder this writer made
    std::error_code ec;
    fs::remove_all(temp_, ec);
}

void SubmissionWriter::write(const std::string& relative, std::span<const std::uint8_t> bytes) {
    const fs::path p = temp_ / relative;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw Error("cannot create " + p.parent_path().string() + ": " + ec.message());
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot write " + p.string() + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            throw Error("cannot write " + p.string() + ": " + std::strerror(err));
        }
        done += static_cast<std::size_t>(n);
    }
    const int rc = ::fsync(fd);
    const int err = errno;
    if (::close(fd) != 0 || rc != 0) throw Error("cannot write " + p.string() + ": " + std::strerror(err));
}

void SubmissionWriter::write(const std::string& relative, std::string_view text) {
    write(relative, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

void SubmissionWriter::commit() {
    // Every folder's entries made durable before the rename publishes them.
    for (const auto& e : fs::recursive_directory_iterator(temp_))
        if (e.is_directory()) fsync_path(e.path(), O_RDONLY | O_DIRECTORY);
    fsync_path(temp_, O_RDONLY | O_DIRECTORY);
    check_submission_target(out_);  // still absent or empty: nobody wrote there meanwhile
    const fs::path target = parent_of(out_) / name_of(out_);
    // rename(2) replaces an empty directory atomically and refuses a non-empty one.
    if (::rename(temp_.c_str(), target.c_str()) != 0)
        throw Error("cannot rename " + temp_.string() + " to " + target.string() + ": " + std::strerror(errno));
    committed_ = true;
    fsync_path(parent_of(out_), O_RDONLY | O_DIRECTORY);
}

}  // namespace revgraph::qualify
