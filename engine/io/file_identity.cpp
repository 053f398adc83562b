#include "engine/io/file_identity.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <system_error>

namespace revgraph::io {

namespace fs = std::filesystem;

namespace {

struct Identity {
    dev_t dev;
    ino_t ino;
    bool operator==(const Identity&) const = default;
};

std::optional<Identity> identity_of(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // follows links
    return Identity{st.st_dev, st.st_ino};
}

// The directory part resolved as far as it exists, the last component kept as given.
fs::path canonical_parent(const fs::path& path) {
    const fs::path absolute = fs::absolute(path).lexically_normal();
    fs::path name = absolute.filename();
    fs::path parent = absolute.parent_path();
    if (name.empty()) {  // "dir/": the normal form ends in a separator
        name = parent.filename();
        parent = parent.parent_path();
    }
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(parent, ec);
    if (ec) resolved = parent;
    return resolved / name;
}

}  // namespace

fs::path resolve_output(const fs::path& path) {
    fs::path p = canonical_parent(path);
    // Follow the last component while it is a symlink; 40 is Linux's own limit (ELOOP).
    for (int hops = 0; hops < 40; ++hops) {
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
        const fs::path to = fs::read_symlink(p, ec);
        if (ec) return p;
        p = canonical_parent(to.is_absolute() ? to : p.parent_path() / to);
    }
    throw Error("cannot write " + path.string() + ": too many levels of symbolic links");
}

std::string non_regular_kind(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "";
    if (S_ISREG(st.st_mode)) return "";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISCHR(st.st_mode)) return "a character device";
    if (S_ISBLK(st.st_mode)) return "a block device";
    if (S_ISFIFO(st.st_mode)) return "a fifo";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    return "not a regular file";
}

void require_regular_or_new(const fs::path& path) {
    const std::string kind = non_regular_kind(path);
    if (kind == "a directory") throw Error("cannot write " + path.string() + ": it is a directory");
    if (!kind.empty())
        throw Error("cannot write " + path.string() + ": it is " + kind +
                    ", not a regular file (outputs replace only regular files; links are written through)");
}

void require_distinct_files(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
    struct Seen {
        const NamedPath* named;
        fs::path resolved;
        std::optional<Identity> id;
    };
    std::vector<Seen> inputs_seen, outputs_seen;
    for (const NamedPath& in : inputs)
        if (auto id = identity_of(in.path)) inputs_seen.push_back({&in, fs::path(), id});
    auto same = [](const Seen& a, const Seen& b) {
        if (a.id && b.id) return *a.id == *b.id;
        return !a.resolved.empty() && a.resolved == b.resolved;
    };
    for (const NamedPath& out : outputs) {
        require_regular_or_new(out.path);
        const Seen s{&out, resolve_output(out.path), identity_of(out.path)};
        for (const Seen& in : inputs_seen)
            if (same(s, in))
                throw SameFileError(out.what + " " + out.path.string() + " is the same file as the input " +
                                    in.named->what + " " + in.named->path.string() +
                                    ": an output may not replace an input");
        for (const Seen& earlier : outputs_seen)
            if (same(s, earlier))
                throw SameFileError(earlier.named->what + " " + earlier.named->path.string() + " and " + out.what +
                                    " " + out.path.string() + " are the same file");
        outputs_seen.push_back(s);
    }
}

void require_writable_directory(const fs::path& output) {
    const fs::path parent = fs::absolute(output).parent_path();
    std::error_code ec;
    if (!fs::is_directory(parent, ec))
        throw Error("cannot write " + output.string() + ": " +
                    (fs::exists(parent, ec) ? parent.string() + " is not a directory"
                                            : "directory " + parent.string() + " does not exist"));
    if (::access(parent.c_str(), W_OK) != 0)
        throw Error("cannot write " + output.string() + ": directory " + parent.string() + " is not writable");
    if (fs::is_directory(output, ec)) throw Error("cannot write " + output.string() + ": it is a directory");
}

void require_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
    // The program running reads itself as it runs (the command, or python3 under the package): an
    // output over it is refused like one over any input (`export --output build/tools/revgraph`).
    std::vector<NamedPath> read = inputs;
    std::error_code ec;
    if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec)
        read.push_back({"the running program", self});
    require_distinct_files(read, outputs);
    for (const NamedPath& out : outputs) require_writable_directory(out.path);
}

}  // namespace revgraph::io
