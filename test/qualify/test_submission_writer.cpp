// The submission writer's all-or-nothing promise (engine/qualify/submission.hpp), on a real
// temporary directory: a writer that fails part way leaves neither the target nor a temporary
// folder, and two writers of one target never share a temporary folder.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/qualify/submission.hpp"

namespace fs = std::filesystem;
using revgraph::qualify::SubmissionWriter;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "revgraph-writer-XXXXXX").string();
        REQUIRE(::mkdtemp(t.data()) != nullptr);
        path = t;
    }
    ~TempDir() { fs::remove_all(path); }
    std::vector<std::string> names() const {
        std::vector<std::string> n;
        for (const auto& e : fs::directory_iterator(path)) n.push_back(e.path().filename().string());
        return n;
    }
};

std::string text_of(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("a failure part way leaves neither the target nor its temporary folder") {
    TempDir dir;
    const fs::path out = dir.path / "sub";
    try {
        SubmissionWriter w(out);
        w.write("protocol.json", std::string_view("{}\n"));
        w.write("predictions/draw-00.npy", std::string_view("x"));
        CHECK(dir.names().size() == 1);  // the temporary folder, and only it
        throw std::runtime_error("part way");
    } catch (const std::runtime_error&) {}
    CHECK_FALSE(fs::exists(out));
    CHECK(dir.names().empty());
}

TEST_CASE("two writers of one target each keep their own temporary folder") {
    TempDir dir;
    const fs::path out = dir.path / "sub";
    {
        SubmissionWriter first(out);
        first.write("a.txt", std::string_view("first"));
        {
            SubmissionWriter second(out);  // another qualify of the same folder, say on another thread
            second.write("a.txt", std::string_view("second"));
            CHECK(dir.names().size() == 2);
        }  // the second gives up: only its own folder goes
        CHECK(dir.names().size() == 1);
        first.write("b.txt", std::string_view("more"));
        first.commit();
    }
    CHECK(text_of(out / "a.txt") == "first");
    CHECK(text_of(out / "b.txt") == "more");
    CHECK(dir.names() == std::vector<std::string>{"sub"});
}

TEST_CASE("a folder left beside the target by someone else is not touched") {
    TempDir dir;
    const fs::path out = dir.path / "sub";
    const fs::path stray = dir.path / (".sub.tmp-" + std::to_string(::getpid()));
    fs::create_directory(stray);
    std::ofstream(stray / "keep") << "k";
    {
        SubmissionWriter w(out);
        w.write("a.txt", std::string_view("a"));
    }
    CHECK(text_of(stray / "keep") == "k");
    CHECK_FALSE(fs::exists(out));
}

TEST_CASE("the folder of a writer that no longer runs is removed by the next; a live one's is not") {
    TempDir dir;
    const fs::path out = dir.path / "sub";
    const pid_t gone = ::fork();  // a process that has exited: its PID no longer runs
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    REQUIRE(::waitpid(gone, nullptr, 0) == gone);
    // This machine's tag, as the writer names its own folder: ".sub.tmp-PID-TAG-".
    const std::string own = revgraph::io::temporary_prefix(out), mine = ".sub.tmp-" + std::to_string(::getpid()) + "-";
    REQUIRE(own.rfind(mine, 0) == 0);
    const std::string tag = own.substr(mine.size());
    const fs::path stale = dir.path / (".sub.tmp-" + std::to_string(gone) + "-" + tag + "00c0ffee00c0ffee");
    const fs::path live = dir.path / (".sub.tmp-" + std::to_string(::getppid()) + "-" + tag + "00c0ffee00c0ffee");
    for (const fs::path& p : {stale, live}) {
        fs::create_directories(p / "predictions");
        std::ofstream(p / "predictions" / "draw-01.npy") << "half";
    }
    {
        SubmissionWriter w(out);
        // Its own folder carries its PID, so that a later writer can tell when it is gone.
        std::vector<std::string> own;
        for (const auto& name : dir.names())
            if (name.rfind(".sub.tmp-" + std::to_string(::getpid()) + "-", 0) == 0) own.push_back(name);
        CHECK(own.size() == 1);
        w.write("a.txt", std::string_view("a"));
        w.commit();
    }
    CHECK_FALSE(fs::exists(stale));
    CHECK(text_of(live / "predictions" / "draw-01.npy") == "half");
    CHECK(text_of(out / "a.txt") == "a");
}
