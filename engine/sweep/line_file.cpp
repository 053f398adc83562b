#include "engine/sweep/line_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/error.hpp"

namespace revgraph::sweep {

LineFile::LineFile(std::filesystem::path path) : path_(std::move(path)) {
    const std::string name = path_.string();
    fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT) {
        fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        created_ = fd_ >= 0;
    }
    if (fd_ < 0) throw Error("cannot open " + name + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw Error("cannot write " + name + ": not a regular file");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const bool busy = errno == EWOULDBLOCK;
        const std::string why = std::strerror(errno);
        ::close(fd_);
        fd_ = -1;
        throw Error(busy ? name + " is being written by another sweep" : "cannot lock " + name + ": " + why);
    }
    char chunk[1 << 16];
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd_, chunk, sizeof chunk, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd_);
            fd_ = -1;
            throw Error("cannot read " + name + ": " + why);
        }
        if (n == 0) break;
        initial_.append(chunk, static_cast<std::size_t>(n));
        at += n;
    }
    size_ = initial_.size();
}

LineFile::~LineFile() {
    if (fd_ >= 0) ::close(fd_);  // also releases the lock
}

void LineFile::truncate(std::uint64_t size) {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
        throw Error("cannot truncate " + path_.string() + ": " + std::strerror(errno));
    size_ = size;
}

void LineFile::append(const std::string& line) {
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n == static_cast<ssize_t>(line.size())) {
        size_ += line.size();
        return;
    }
    // Nothing or part of it went out (a full disk): take a part back, so the file never keeps
    // half a line.
    const std::string why = n < 0 ? std::strerror(errno) : "short write";
    if (n > 0) (void)::ftruncate(fd_, static_cast<off_t>(size_));
    throw Error("cannot write " + path_.string() + ": " + why);
}

void LineFile::sync() {
    if (::fdatasync(fd_) != 0) throw Error("cannot sync " + path_.string() + ": " + std::strerror(errno));
    if (created_) {
        // The new file's name must survive a crash too, not only its bytes.
        auto dir = path_.parent_path();
        if (dir.empty()) dir = ".";
        const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)::fsync(dfd);
            ::close(dfd);
        }
        created_ = false;
    }
}

}  // namespace revgraph::sweep
