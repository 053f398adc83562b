#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "test/io/util.hpp"

using iotest::Bytes;
using iotest::to_bytes;
using revgraph::Error;
using revgraph::io::AtomicFile;
using revgraph::io::read_file;
using revgraph::io::write_file_atomic;

TEST_CASE("atomic file: writes, replaces, and leaves nothing else behind") {
    iotest::ScratchDir dir;
    write_file_atomic(dir / "out.json", std::string("{\"a\": 1}\n"));
    CHECK(read_file(dir / "out.json") == to_bytes("{\"a\": 1}\n"));
    write_file_atomic(dir / "out.json", Bytes{1, 2, 3});
    CHECK(read_file(dir / "out.json") == Bytes{1, 2, 3});
    write_file_atomic(dir / "empty", Bytes{});
    CHECK(read_file(dir / "empty").empty());
    CHECK(dir.listing().size() == 2);

    AtomicFile f(dir / "parts");
    CHECK(f.temp_path().parent_path() == dir.path());  // same directory, so rename is atomic
    f.write(std::string("ab"));
    f.write(Bytes{'c'});
    CHECK_FALSE(std::filesystem::exists(dir / "parts"));  // nothing visible before commit
    f.commit();
    CHECK(read_file(dir / "parts") == to_bytes("abc"));
    CHECK_THROWS_AS(f.write(std::string("x")), Error);
    CHECK(dir.listing().size() == 3);
}

TEST_CASE("atomic file: a writer that fails part way leaves the old target untouched") {
    iotest::ScratchDir dir;
    write_file_atomic(dir / "report.json", std::string("old"));
    try {
        AtomicFile f(dir / "report.json");
        f.write(std::string("new, but only half of it"));
        throw std::runtime_error("writer failed");
    } catch (const std::runtime_error&) {}
    CHECK(read_file(dir / "report.json") == to_bytes("old"));
    CHECK(dir.listing() == std::vector<std::string>{"report.json"});  // temporary removed
}

TEST_CASE("atomic file: unwritable targets are one-line errors") {
    iotest::ScratchDir dir;
    std::filesystem::create_directory(dir / "sub");
    for (const auto& target : {dir / "missing" / "out.npz", dir / "sub"}) {
        CAPTURE(target);
        try {
            write_file_atomic(target, std::string("x"));
            FAIL("no error");
        } catch (const Error& e) {
            const std::string msg = e.what();
            CHECK(msg.rfind("cannot write " + target.string() + ": ", 0) == 0);
            CHECK(msg.find('\n') == std::string::npos);
        }
    }
    CHECK(std::filesystem::is_directory(dir / "sub"));
    CHECK(dir.listing() == std::vector<std::string>{"sub"});
    CHECK_THROWS_AS(read_file(dir / "sub"), Error);  // reading a directory fails too
    // A device would never end (/dev/zero) or is no file at all: refused at once.
    CHECK_THROWS_WITH_AS(read_file("/dev/zero"), "cannot read /dev/zero: not a regular file or pipe", Error);
}

TEST_CASE("atomic file: several outputs or none") {
    iotest::ScratchDir dir;
    using Files = std::vector<std::pair<std::filesystem::path, Bytes>>;
    revgraph::io::write_files_atomic(Files{{dir / "a", to_bytes("A1")}, {dir / "b", to_bytes("B1")}});
    CHECK(read_file(dir / "a") == to_bytes("A1"));
    CHECK(read_file(dir / "b") == to_bytes("B1"));

    // The second output cannot be staged: the first must not be replaced either.
    CHECK_THROWS_AS(
        revgraph::io::write_files_atomic(Files{{dir / "a", to_bytes("A2")}, {dir / "nodir" / "b", to_bytes("B2")}}),
        Error);
    CHECK(read_file(dir / "a") == to_bytes("A1"));
    // Naming one target twice is refused before anything is written.
    CHECK_THROWS_AS(
        revgraph::io::write_files_atomic(Files{{dir / "a", to_bytes("A3")}, {dir / "." / "a", to_bytes("A4")}}), Error);
    CHECK(read_file(dir / "a") == to_bytes("A1"));
    CHECK(dir.listing().size() == 2);
}
