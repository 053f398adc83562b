// Outputs never replace inputs: one file however spelled, links followed; the writer resolves
// links the same way; RESULT.json is the commit point under a kill at any step.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/deferred_signals.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/io/sha256.hpp"
#include "test/io/util.hpp"

namespace fs = std::filesystem;
using iotest::Bytes;
using iotest::to_bytes;
using revgraph::Error;
using revgraph::io::NamedPath;
using revgraph::io::read_file;
using revgraph::io::require_distinct_files;
using revgraph::io::SameFileError;
using revgraph::io::write_file_atomic;

TEST_CASE("file identity: an output that is an input, however spelled, is refused") {
    iotest::ScratchDir dir;
    write_file_atomic(dir / "in.npz", std::string("input"));
    fs::create_directory(dir / "sub");
    fs::create_directory_symlink(dir.path(), dir / "sub" / "up");
    fs::create_symlink(dir / "in.npz", dir / "link.npz");
    fs::create_symlink("link.npz", dir / "link2.npz");  // relative, and a chain
    fs::create_hard_link(dir / "in.npz", dir / "hard.npz");
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path());
    const std::vector<fs::path> spellings = {
        "in.npz",   "./in.npz",  dir / "in.npz", dir / "sub" / ".." / "in.npz", dir / "sub" / "up" / "in.npz",
        "link.npz", "link2.npz", "hard.npz"};
    for (const auto& out : spellings) {
        CAPTURE(out);
        CHECK_THROWS_WITH_AS(require_distinct_files({{"--input", "in.npz"}}, {{"--state", out}}),
                             doctest::Contains("the same file as the input --input in.npz"), SameFileError);
    }
    // Two outputs, one of them not existing yet, named two ways.
    CHECK_THROWS_AS(
        require_distinct_files({}, {{"--output", "new.json"}, {"--state", dir / "sub" / "up" / "new.json"}}),
        SameFileError);
    // A dangling link names the file it points to.
    fs::create_symlink("target.json", dir / "dangling.json");
    CHECK_THROWS_AS(require_distinct_files({}, {{"--output", "target.json"}, {"--state", "dangling.json"}}),
                    SameFileError);
    // Distinct files pass; inputs that do not exist are left to the reader.
    require_distinct_files({{"--input", "in.npz"}, {"--config", "missing.json"}},
                           {{"--output", "out.json"}, {"--state", "missing.json.npz"}});
    fs::current_path(cwd);
}

TEST_CASE("file identity: an output over the running program is refused as over an input") {
    const fs::path self = fs::read_symlink("/proc/self/exe");
    CHECK_THROWS_WITH_AS(
        revgraph::io::require_outputs({}, {{"--output", self}}),
        doctest::Contains(("is the same file as the input the running program " + self.string()).c_str()),
        SameFileError);
    iotest::ScratchDir dir;
    CHECK_NOTHROW(revgraph::io::require_outputs({}, {{"--output", dir / "entry.py"}}));
}

TEST_CASE("file identity: an output's folder that is missing, or a file, is said as such") {
    iotest::ScratchDir dir;
    write_file_atomic(dir / "afile", std::string("x"));
    CHECK_THROWS_WITH_AS(revgraph::io::require_writable_directory(dir / "afile" / "out.json"),
                         ("cannot write " + (dir / "afile" / "out.json").string() + ": " + (dir / "afile").string() +
                          " is not a directory")
                             .c_str(),
                         Error);
    CHECK_THROWS_WITH_AS(revgraph::io::require_writable_directory(dir / "none" / "out.json"),
                         ("cannot write " + (dir / "none" / "out.json").string() + ": directory " +
                          (dir / "none").string() + " does not exist")
                             .c_str(),
                         Error);
    CHECK_NOTHROW(revgraph::io::require_writable_directory(dir / "out.json"));
}

TEST_CASE("atomic file: only regular files are replaced; links are written through") {
    iotest::ScratchDir dir;
    // Devices, fifos and links to them: one clear error, nothing created beside them.
    CHECK_THROWS_WITH_AS(write_file_atomic("/dev/null", std::string("x")),
                         doctest::Contains("cannot write /dev/null: it is a character device, not a regular file"),
                         Error);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "fifo", std::string("x")), doctest::Contains("it is a fifo"), Error);
    fs::create_symlink("/dev/null", dir / "null-link");
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "null-link", std::string("x")),
                         doctest::Contains("a character device, not a regular file"), Error);
    CHECK(fs::is_symlink(dir / "null-link"));
    CHECK(fs::is_character_file("/dev/null"));
    // A link to a regular file: the file is replaced, the link stays a link.
    fs::create_directory(dir / "real");
    write_file_atomic(dir / "real" / "r.json", std::string("old"));
    fs::create_symlink(dir / "real" / "r.json", dir / "r.json");
    write_file_atomic(dir / "r.json", std::string("new"));
    CHECK(fs::is_symlink(dir / "r.json"));
    CHECK(read_file(dir / "real" / "r.json") == to_bytes("new"));
    // A dangling link: the file is created where it points.
    fs::create_symlink("real/made.json", dir / "made-link.json");
    write_file_atomic(dir / "made-link.json", std::string("made"));
    CHECK(fs::is_symlink(dir / "made-link.json"));
    CHECK(read_file(dir / "real" / "made.json") == to_bytes("made"));
    // No temporaries anywhere.
    std::vector<std::string> real_files;
    for (const auto& e : fs::directory_iterator(dir / "real")) real_files.push_back(e.path().filename().string());
    CHECK(real_files.size() == 2);
    CHECK(dir.listing().size() == 5);  // fifo, null-link, real, r.json, made-link.json
}

TEST_CASE("atomic file: temporaries of a writer that no longer runs are removed by the next") {
    iotest::ScratchDir dir;
    write_file_atomic(dir / "r.json", std::string("old"));
    // A process that has exited: its PID no longer runs.
    const pid_t gone = ::fork();
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    REQUIRE(::waitpid(gone, nullptr, 0) == gone);
    // This machine's tag, as this process names its own temporaries: ".r.json.tmp-PID-TAG-".
    const std::string own = revgraph::io::temporary_prefix(dir / "r.json"),
                      mine = ".r.json.tmp-" + std::to_string(::getpid()) + "-";
    REQUIRE(own.rfind(mine, 0) == 0);
    const std::string tag = own.substr(mine.size());  // "TAG-"
    REQUIRE(tag.size() == 9);
    const std::string stale = ".r.json.tmp-" + std::to_string(gone) + "-" + tag + "12345";
    const std::string live = ".r.json.tmp-" + std::to_string(::getppid()) + "-" + tag + "6789";  // a live process's
    // A process of that PID that has exited here may run on another machine sharing the folder.
    const std::string elsewhere =
        ".r.json.tmp-" + std::to_string(gone) + "-" + (tag[0] == '0' ? "1" : "0") + tag.substr(1) + "12345";
    const std::string untagged = ".r.json.tmp-" + std::to_string(gone) + "-12345";  // whose machine is unknown
    for (const std::string& name : {stale, live, elsewhere, untagged}) write_file_atomic(dir / name, std::string("x"));
    write_file_atomic(dir / "r.json", std::string("new"));
    CHECK_FALSE(fs::exists(dir / stale));
    CHECK(fs::exists(dir / live));
    CHECK(fs::exists(dir / elsewhere));
    CHECK(fs::exists(dir / untagged));
    CHECK(read_file(dir / "r.json") == to_bytes("new"));
}

namespace {

int signal_at_step = 0, hook_signal = SIGKILL;
void signal_hook(int step) {
    if (step == signal_at_step) ::raise(hook_signal);
}

// What RESULT.json holds here: the sha256 of each data file it describes.
std::string describe(const Bytes& predictions, const Bytes& state) {
    return revgraph::io::sha256_hex(predictions.data(), predictions.size()) + " " +
           revgraph::io::sha256_hex(state.data(), state.size());
}

// A child process writes the set (r.json describing p.npy and s.npz) and is sent `sig` at commit
// step `step`; its waitpid status (exit 0: done, 3: an error, or the signal that ended it).
int commit_in_child(const fs::path& dir, int step, int sig, const Bytes& p, const Bytes& s) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        signal_at_step = step;
        hook_signal = sig;
        if (sig != SIGKILL) ::signal(sig, SIG_DFL);  // not doctest's crash report: the signal's own end
        revgraph::io::set_commit_step_hook(signal_hook);
        try {
            revgraph::io::write_result_set(dir / "r.json", to_bytes(describe(p, s)),
                                           {{dir / "s.npz", s}, {dir / "p.npy", p}});
        } catch (...) { ::_exit(3); }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    return status;
}

}  // namespace

TEST_CASE("result set: after a kill at every step, a RESULT.json on disk describes the files beside it") {
    const Bytes old_p = to_bytes("old predictions"), old_s = to_bytes("old state");
    const Bytes new_p = to_bytes("new predictions!"), new_s = to_bytes("new state!");
    int completed_at = 0;
    for (int k = 1; k <= 12 && completed_at == 0; ++k) {
        CAPTURE(k);
        for (const bool earlier : {true, false}) {
            CAPTURE(earlier);
            iotest::ScratchDir dir;
            if (earlier) {
                write_file_atomic(dir / "p.npy", old_p);
                write_file_atomic(dir / "s.npz", old_s);
                write_file_atomic(dir / "r.json", describe(old_p, old_s));
            }
            const int status = commit_in_child(dir.path(), k, SIGKILL, new_p, new_s);
            const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
            REQUIRE((killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
            if (!killed && earlier) completed_at = k;
            // The invariant: a result file describes exactly the data files beside it.
            if (fs::exists(dir / "r.json")) {
                REQUIRE(fs::exists(dir / "p.npy"));
                REQUIRE(fs::exists(dir / "s.npz"));
                CHECK(read_file(dir / "r.json") ==
                      to_bytes(describe(read_file(dir / "p.npy"), read_file(dir / "s.npz"))));
            }
            // Each data file is the earlier one or the new one, never anything else.
            if (fs::exists(dir / "p.npy"))
                CHECK((read_file(dir / "p.npy") == old_p || read_file(dir / "p.npy") == new_p));
            if (fs::exists(dir / "s.npz"))
                CHECK((read_file(dir / "s.npz") == old_s || read_file(dir / "s.npz") == new_s));
            if (killed && earlier && k <= 3) {  // killed while staging: the earlier set untouched
                CHECK(read_file(dir / "r.json") == to_bytes(describe(old_p, old_s)));
            }
            if (!killed) CHECK(read_file(dir / "r.json") == to_bytes(describe(new_p, new_s)));
            // A kill leaves at most temporaries the next writer removes (their PID is gone).
            revgraph::io::write_result_set(dir / "r.json", to_bytes(describe(new_p, new_s)),
                                           {{dir / "s.npz", new_s}, {dir / "p.npy", new_p}});
            CHECK(dir.listing().size() == 3);
        }
    }
    // 3 temporaries staged, the earlier result removed, 2 renames, the commit: 7 steps.
    CHECK(completed_at == 8);
}

TEST_CASE("result set: Ctrl-C or SIGTERM once the commit began waits for it; the process then ends") {
    // SIGKILL cannot wait (the test above); the signals a user sends can: from the removal of the
    // earlier RESULT.json to the new one's rename they are deferred (io::DeferredSignals), so the
    // set is the new one whole, never no result file; during staging they end the process at once,
    // the earlier set untouched.
    const Bytes old_p = to_bytes("old predictions"), old_s = to_bytes("old state");
    const Bytes new_p = to_bytes("new predictions!"), new_s = to_bytes("new state!");
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
        for (int k = 1; k <= 7; ++k) {  // 3 staged, the earlier result removed, 2 renames, the commit
            CAPTURE(sig);
            CAPTURE(k);
            iotest::ScratchDir dir;
            write_file_atomic(dir / "p.npy", old_p);
            write_file_atomic(dir / "s.npz", old_s);
            write_file_atomic(dir / "r.json", describe(old_p, old_s));
            const int status = commit_in_child(dir.path(), k, sig, new_p, new_s);
            REQUIRE(WIFSIGNALED(status));  // not an exit: the signal ends it when the commit is done
            CHECK(WTERMSIG(status) == sig);
            REQUIRE(fs::exists(dir / "r.json"));
            CHECK(read_file(dir / "r.json") == to_bytes(k <= 3 ? describe(old_p, old_s) : describe(new_p, new_s)));
            CHECK(read_file(dir / "p.npy") == (k <= 3 ? old_p : new_p));
            CHECK(read_file(dir / "s.npz") == (k <= 3 ? old_s : new_s));
        }
    }
    // Nested guards, and the handlers in force before them back after the last.
    struct sigaction before {};
    ::sigaction(SIGTERM, nullptr, &before);
    {
        const revgraph::io::DeferredSignals outer;
        { const revgraph::io::DeferredSignals inner; }
        struct sigaction during {};
        ::sigaction(SIGTERM, nullptr, &during);
        CHECK((during.sa_handler != before.sa_handler));
    }
    struct sigaction after {};
    ::sigaction(SIGTERM, nullptr, &after);
    CHECK((after.sa_handler == before.sa_handler));
}
