#include "engine/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "engine/error.hpp"
#include "engine/io/deferred_signals.hpp"
#include "engine/io/file_identity.hpp"

namespace revgraph::io {

namespace fs = std::filesystem;

namespace {

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
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw Error("cannot sync directory " + dir.string() + ": " + why);
    }
    ::close(fd);
}

void (*commit_step_hook)(int) = nullptr;

std::string temp_prefix(const fs::path& resolved) {
    // Appended rather than "." + name: GCC 12 warns falsely (-Wrestrict) about the operator+ form.
    std::string prefix = ".";
    prefix += resolved.filename().string();
    prefix += ".tmp-";
    return prefix;
}

void step_done(int& step) {
    ++step;
    if (commit_step_hook != nullptr) commit_step_hook(step);
}

// This machine, in a temporary's name: a PID says whether its writer runs only on the machine that
// wrote it, and a folder on a shared file system (a cluster's nodes) also holds other machines'
// temporaries, whose writers may well be running. 8 hex digits of FNV-1a over the host name.
const std::string& host_tag() {
    static const std::string tag = [] {
        char name[256] = {};
        if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
        std::uint32_t h = 2166136261u;
        for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
        char hex[9];
        std::snprintf(hex, sizeof hex, "%08x", h);
        return std::string(hex);
    }();
    return tag;
}

}  // namespace

void set_commit_step_hook(void (*hook)(int)) { commit_step_hook = hook; }

// Only this machine's entries of processes that no longer exist are removed, so a concurrent
// writer's temporary (a live PID, or another machine's) is never touched; and only regular files
// or, where asked, directories (never a link).
void remove_stale_temporaries(const fs::path& resolved, bool folders) noexcept {
    const std::string prefix = temp_prefix(resolved);
    std::error_code ec;
    for (fs::directory_iterator it(parent_dir(resolved), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        const std::size_t dash = name.find('-', prefix.size());
        if (dash == std::string::npos || dash == prefix.size()) continue;
        pid_t pid = 0;
        bool digits = true;
        for (std::size_t i = prefix.size(); i < dash; ++i) {
            if (name[i] < '0' || name[i] > '9' || pid > 100000000)
                digits = false;
            else
                pid = pid * 10 + (name[i] - '0');
        }
        if (!digits || pid <= 0 || pid == ::getpid()) continue;
        if (name.compare(dash + 1, host_tag().size() + 1, host_tag() + "-") != 0) continue;  // not this machine's
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) continue;
        const bool file = S_ISREG(st.st_mode), folder = folders && S_ISDIR(st.st_mode);
        if (!file && !folder) continue;
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
        std::error_code gone;
        fs::remove_all(it->path(), gone);
    }
}

std::string temporary_prefix(const fs::path& resolved) {
    return temp_prefix(resolved) + std::to_string(::getpid()) + "-" + host_tag() + "-";
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
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
            const std::string why = std::strerror(errno);
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
    if (target_.filename().empty()) throw Error("cannot write " + target_.string() + ": not a file name");
    resolved_ = resolve_output(target_);
    require_regular_or_new(target_);
    remove_stale_temporaries(resolved_, false);
    // A random suffix keeps concurrent writers of the same target apart; O_EXCL makes sure
    // we never write into someone else's file. The PID lets the next writer tell ours is stale.
    std::random_device rd;
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
        temp_ = parent_dir(resolved_) / (temporary_prefix(resolved_) + std::to_string(rd()));
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && errno != EEXIST) throw Error("cannot write " + target_.string() + ": " + std::strerror(errno));
    }
    if (fd_ < 0) throw Error("cannot write " + target_.string() + ": no free temporary name");
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      resolved_(std::move(other.resolved_)),
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
            throw Error("cannot write " + target_.string() + ": " + std::strerror(errno));
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::write(std::string_view text) {
    write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

void AtomicFile::finish() {
    if (committed_) throw Error("cannot write " + target_.string() + ": already finished");
    if (fd_ < 0) return;
    // Data must be on disk before the rename publishes it, or a crash could expose an
    // empty or partial file under the target name.
    if (::fsync(fd_) != 0) throw Error("cannot write " + target_.string() + ": " + std::strerror(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error("cannot write " + target_.string() + ": " + std::strerror(errno));
}

void AtomicFile::commit() {
    finish();
    if (::rename(temp_.c_str(), resolved_.c_str()) != 0)
        throw Error("cannot write " + target_.string() + ": " + std::strerror(errno));
    committed_ = true;
    fsync_directory(parent_dir(resolved_));
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
    std::vector<NamedPath> named;
    for (const auto& file : files) named.push_back({"output", file.first});
    require_distinct_files({}, named);
    // Stage everything first; if any of it fails the destructors remove every temporary.
    std::vector<AtomicFile> staged;
    staged.reserve(files.size());
    for (const auto& [path, bytes] : files) {
        staged.emplace_back(path);
        staged.back().write(bytes);
        staged.back().finish();
    }
    std::string replaced;
    const DeferredSignals until_committed;  // all renamed, or (a signal) none: it waits for them
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

void write_result_set(const fs::path& result, const std::vector<std::uint8_t>& result_bytes,
                      const std::vector<std::pair<fs::path, std::vector<std::uint8_t>>>& data) {
    std::vector<NamedPath> named{{"result", result}};
    for (const auto& file : data) named.push_back({"output", file.first});
    require_distinct_files({}, named);
    int step = 0;
    // 1. Stage everything; a failure here removes every temporary and changes nothing.
    std::vector<AtomicFile> staged;
    staged.reserve(data.size());
    for (const auto& [path, bytes] : data) {
        staged.emplace_back(path);
        staged.back().write(bytes);
        staged.back().finish();
        step_done(step);
    }
    AtomicFile result_file(result);
    result_file.write(result_bytes);
    result_file.finish();
    step_done(step);
    // 2. No result file from here to the commit: an earlier one would describe data files that
    // step 3 is about to replace. Ctrl-C and the like wait for the commit (DeferredSignals).
    const DeferredSignals until_committed;
    struct stat st {};
    if (::lstat(result_file.resolved().c_str(), &st) == 0) {
        if (::unlink(result_file.resolved().c_str()) != 0)
            throw Error("cannot write " + result.string() + ": cannot remove the earlier one: " + std::strerror(errno));
        fsync_directory(parent_dir(result_file.resolved()));
        step_done(step);
    }
    // 3. The data files.
    std::string replaced;
    for (AtomicFile& file : staged) {
        try {
            file.commit();
        } catch (const Error& e) {
            throw Error(std::string(e.what()) + " (no result file written; already replaced:" +
                        (replaced.empty() ? std::string(" nothing") : replaced) + ")");
        }
        replaced.append(" ").append(file.target().string());
        step_done(step);
    }
    // 4. The commit point.
    result_file.commit();
    step_done(step);
}

}  // namespace revgraph::io
