#include "engine/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <set>

#include "engine/error.hpp"

namespace revgraph::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Directory a relative bare file name lives in ("out.npz" → ".").
fs::path parent_dir(const fs::path& target) {
    fs::path parent = target.parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

void fsync_directory(const fs::path& dir) {
    // Makes the rename itself durable; some file systems refuse fsync on a directory
    // (EINVAL), which only means there is nothing more to flush.
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        const std::string why = errno_text();
        ::close(fd);
        throw Error("cannot sync directory " + dir.string() + ": " + why);
    }
    ::close(fd);
}

}  // namespace

std::vector<std::uint8_t> read_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + path.string() + ": " + errno_text());
    // Files and pipes only: a directory or a device (/dev/zero, a terminal) would fail late or
    // never end.
    struct stat st {};
    if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
        ::close(fd);
        throw Error("cannot read " + path.string() + ": " +
                    (S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file or pipe"));
    }
    std::vector<std::uint8_t> bytes;
    std::uint8_t chunk[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            const std::string why = errno_text();
            ::close(fd);
            throw Error("cannot read " + path.string() + ": " + why);
        }
        if (n == 0) break;
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    ::close(fd);
    return bytes;
}

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
    if (target_.filename().empty())
        throw Error("cannot write " + target_.string() + ": not a file name");
    std::error_code ec;
    if (fs::is_directory(target_, ec))
        throw Error("cannot write " + target_.string() + ": it is a directory");
    // A random suffix keeps concurrent writers of the same target apart; O_EXCL makes sure
    // we never write into someone else's file.
    std::random_device rd;
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
        const std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(rd());
        temp_ = parent_dir(target_) / (std::string(".") + target_.filename().string() + ".tmp-" + suffix);
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && errno != EEXIST)
            throw Error("cannot write " + target_.string() + ": " + errno_text());
    }
    if (fd_ < 0) throw Error("cannot write " + target_.string() + ": no free temporary name");
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      fd_(other.fd_),
      committed_(other.committed_) {
    other.fd_ = -1;
    other.committed_ = true;  // the moved-from object owns nothing to clean up
}

AtomicFile::~AtomicFile() {
    if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    committed_ = true;
}

void AtomicFile::write(std::span<const std::uint8_t> bytes) {
    if (committed_ || fd_ < 0) throw Error("cannot write " + target_.string() + ": already finished");
    const std::uint8_t* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error("cannot write " + target_.string() + ": " + errno_text());
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::write(std::string_view text) {
    write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()),
                                        text.size()));
}

void AtomicFile::finish() {
    if (committed_) throw Error("cannot write " + target_.string() + ": already finished");
    if (fd_ < 0) return;
    // Data must be on disk before the rename publishes it, or a crash could expose an
    // empty or partial file under the target name.
    if (::fsync(fd_) != 0) throw Error("cannot write " + target_.string() + ": " + errno_text());
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error("cannot write " + target_.string() + ": " + errno_text());
}

void AtomicFile::commit() {
    finish();
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
        throw Error("cannot write " + target_.string() + ": " + errno_text());
    committed_ = true;
    fsync_directory(parent_dir(target_));
}

void write_file_atomic(const fs::path& path, std::span<const std::uint8_t> bytes) {
    AtomicFile file(path);
    file.write(bytes);
    file.commit();
}

void write_file_atomic(const fs::path& path, std::string_view text) {
    AtomicFile file(path);
    file.write(text);
    file.commit();
}

void write_files_atomic(const std::vector<std::pair<fs::path, std::vector<std::uint8_t>>>& files) {
    std::set<fs::path> seen;
    for (const auto& [path, bytes] : files) {
        if (!seen.insert(fs::absolute(path).lexically_normal()).second)
            throw Error("cannot write " + path.string() + ": named twice in one output set");
    }
    // Stage everything first; if any of it fails the destructors remove every temporary.
    std::vector<AtomicFile> staged;
    staged.reserve(files.size());
    for (const auto& [path, bytes] : files) {
        staged.emplace_back(path);
        staged.back().write(bytes);
        staged.back().finish();
    }
    std::string replaced;
    for (AtomicFile& file : staged) {
        try {
            file.commit();
        } catch (const Error& e) {
            throw Error(std::string(e.what()) +
                        (replaced.empty() ? std::string() : std::string(" (already replaced:") + replaced + ")"));
        }
        replaced.append(" ").append(file.target().string());
    }
}

}  // namespace revgraph::io
