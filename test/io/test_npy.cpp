#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/io/npy.hpp"
#include "test/io/util.hpp"

using iotest::Bytes;
using revgraph::Error;
using revgraph::io::Array;
using revgraph::io::parse_npy;
using revgraph::io::serialize_npy;

namespace {

// A .npy file with an arbitrary header text, for the header tests: the length fields are
// right, so only the part under test is wrong.
Bytes make_npy(const std::string& header, const Bytes& payload, int major = 1) {
    Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
    const std::size_t n = header.size();
    out.push_back(static_cast<std::uint8_t>(n));
    out.push_back(static_cast<std::uint8_t>(n >> 8));
    if (major != 1) {
        out.push_back(static_cast<std::uint8_t>(n >> 16));
        out.push_back(static_cast<std::uint8_t>(n >> 24));
    }
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

Array parse(const Bytes& b) { return parse_npy(b, "test.npy"); }

std::string npy_error(const Bytes& b) {
    return iotest::error_of([&] { parse(b); });
}

template <typename T>
std::vector<T> ramp(std::size_t n, T scale, T offset) {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(static_cast<T>(i) * scale + offset);
    return v;
}

const Bytes kSixFloats(24, 0);

}  // namespace

TEST_CASE("npy: numpy-written fixtures have the values make_fixtures.py gave them") {
    using iotest::fixture;
    using revgraph::io::read_npy;

    Array a = read_npy(fixture("f4_2x3.npy"));
    CHECK(a.dtype == "<f4");
    CHECK(a.shape == std::vector<std::int64_t>{2, 3});
    CHECK(a.as<float>() == ramp<float>(6, 0.25f, -1.0f));

    a = read_npy(fixture("f8_scalar.npy"));
    CHECK(a.shape.empty());
    CHECK(a.size() == 1);
    CHECK(a.as<double>() == std::vector<double>{-2.5});

    CHECK(read_npy(fixture("i8_5.npy")).as<std::int64_t>() == ramp<std::int64_t>(5, 1, -2));
    a = read_npy(fixture("i4_2x2x2.npy"));
    CHECK(a.shape == std::vector<std::int64_t>{2, 2, 2});
    CHECK(a.as<std::int32_t>() == ramp<std::int32_t>(8, -1000, 0));
    a = read_npy(fixture("u1_3x4.npy"));
    CHECK(a.dtype == "|u1");
    CHECK(a.as<std::uint8_t>() == ramp<std::uint8_t>(12, 20, 0));
    CHECK(read_npy(fixture("i1_4.npy")).as<std::int8_t>() == ramp<std::int8_t>(4, 1, -2));
    CHECK(read_npy(fixture("i2_3.npy")).as<std::int16_t>() == ramp<std::int16_t>(3, 300, 0));
    CHECK(read_npy(fixture("u2_3.npy")).as<std::uint16_t>() == ramp<std::uint16_t>(3, 300, 0));
    CHECK(read_npy(fixture("u4_2.npy")).as<std::uint32_t>() == ramp<std::uint32_t>(2, 1, 4000000000u));
    CHECK(read_npy(fixture("u8_2.npy")).as<std::uint64_t>() == ramp<std::uint64_t>(2, 1, std::uint64_t{1} << 63));

    // Types without a typed accessor still come through as exact bytes.
    a = read_npy(fixture("b1_3.npy"));
    CHECK(a.dtype == "|b1");
    CHECK(a.data == Bytes{1, 0, 1});
    a = read_npy(fixture("f2_2.npy"));
    CHECK(a.dtype == "<f2");
    CHECK(a.data == Bytes{0x00, 0x3E, 0x00, 0xC0});  // half 1.5 and -2.0
    a = read_npy(fixture("c8_2.npy"));
    CHECK(a.dtype == "<c8");
    REQUIRE(a.data.size() == 16);
    float c[4];
    std::memcpy(c, a.data.data(), 16);
    CHECK((c[0] == 1.0f && c[1] == 2.0f && c[2] == 0.0f && c[3] == -3.0f));
    CHECK_THROWS_AS(a.as<float>(), Error);

    a = read_npy(fixture("f4_empty_0.npy"));
    CHECK(a.shape == std::vector<std::int64_t>{0});
    CHECK(a.data.empty());
    a = read_npy(fixture("f4_empty_2x0x3.npy"));
    CHECK(a.shape == std::vector<std::int64_t>{2, 0, 3});
    CHECK(a.size() == 0);
    CHECK(read_npy(fixture("i8_long_axis.npy")).shape == std::vector<std::int64_t>{1234567, 0});

    // Versions 2.0 and 3.0 hold the same array as 1.0 with a 4-byte header length.
    const Array v1 = read_npy(fixture("f4_2x3.npy"));
    CHECK(read_npy(fixture("f4_2x3_v2.npy")).as<float>() == ramp<float>(6, 1, 0));
    CHECK(read_npy(fixture("f4_2x3_v3.npy")).as<float>() == ramp<float>(6, 1, 0));
    CHECK(read_npy(fixture("f4_2x3_v3.npy")).shape == v1.shape);
}

TEST_CASE("npy: our writer reproduces np.save byte for byte") {
    for (const char* name : {"f4_2x3.npy", "f8_scalar.npy", "i8_5.npy", "i4_2x2x2.npy", "u1_3x4.npy", "i1_4.npy",
                             "i2_3.npy", "u2_3.npy", "u4_2.npy", "u8_2.npy", "b1_3.npy", "f2_2.npy", "c8_2.npy",
                             "f4_empty_0.npy", "f4_empty_2x0x3.npy", "i8_long_axis.npy"}) {
        CAPTURE(name);
        const Bytes file = iotest::fixture_bytes(name);
        const Bytes again = serialize_npy(parse_npy(file, name));
        CHECK(again == file);
        CHECK(again.size() % 64 == file.size() % 64);
    }
}

TEST_CASE("npy: round trips of every typed dtype and of 0-d and empty shapes") {
    const std::vector<std::vector<std::int64_t>> shapes = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}};
    auto check_type = [&](auto tag) {
        using T = decltype(tag);
        for (const auto& shape : shapes) {
            const auto n = static_cast<std::size_t>(revgraph::io::element_count(shape));
            const std::vector<T> values = ramp<T>(n, T(3), T(1));
            const Array a = Array::from<T>(shape, values);
            const Bytes file = serialize_npy(a);
            CHECK(file.size() % 64 == (n * sizeof(T)) % 64);  // data starts 64-aligned
            const Array back = parse(file);
            CHECK(back == a);
            CHECK(back.as<T>() == values);
        }
    };
    check_type(float{});
    check_type(double{});
    check_type(std::int8_t{});
    check_type(std::uint8_t{});
    check_type(std::int16_t{});
    check_type(std::uint16_t{});
    check_type(std::int32_t{});
    check_type(std::uint32_t{});
    check_type(std::int64_t{});
    check_type(std::uint64_t{});

    // Raw-byte dtypes round trip too.
    const Array flags("|b1", {2, 2}, Bytes{1, 0, 0, 1});
    CHECK(parse(serialize_npy(flags)) == flags);
    const Array halves("<f2", {1}, Bytes{0x00, 0x3C});
    CHECK(parse(serialize_npy(halves)) == halves);
}

TEST_CASE("npy: typed helpers check dtype and sizes") {
    const Array a = Array::from<float>({2}, std::vector<float>{1, 2});
    CHECK_THROWS_AS(a.as<double>(), Error);
    CHECK_THROWS_AS(a.as<std::int32_t>(), Error);
    CHECK_THROWS_AS(Array::from<float>({2, 2}, std::vector<float>{1, 2, 3}), Error);
    CHECK_THROWS_AS(Array("<f4", {2}, Bytes(7)), Error);
    CHECK_THROWS_AS(Array(">f4", {2}, Bytes(8)), Error);
    CHECK_THROWS_AS(Array("<u1", {2}, Bytes(2)), Error);  // the canonical form is |u1
    CHECK_THROWS_AS(Array("<f4", {-1}, Bytes()), Error);
    Array broken = a;
    broken.data.pop_back();  // an Array edited by hand cannot be saved inconsistent
    CHECK_THROWS_AS(serialize_npy(broken), Error);
}

TEST_CASE("npy: unsupported layouts and dtypes are refused with a clear message") {
    using iotest::fixture_bytes;
    CHECK(npy_error(fixture_bytes("fortran_2x3.npy")).find("Fortran") != std::string::npos);
    CHECK(npy_error(fixture_bytes("bigendian_f4.npy")).find("big-endian") != std::string::npos);
    CHECK(npy_error(fixture_bytes("object.npy")).find("object") != std::string::npos);
    CHECK(npy_error(fixture_bytes("structured.npy")).find("structured") != std::string::npos);
    CHECK(npy_error(fixture_bytes("unicode.npy")).find("unsupported dtype '<U2'") != std::string::npos);
    // Every message is one line and names the source.
    const std::string msg = npy_error(fixture_bytes("fortran_2x3.npy"));
    CHECK(msg.rfind("test.npy: ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
    // Single-byte types have no byte order, so '>' and '<' are both the canonical '|'.
    CHECK(parse(make_npy("{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }\n", Bytes{1, 2})).dtype == "|u1");
    CHECK(parse(make_npy("{'descr': '<i1', 'fortran_order': False, 'shape': (1,), }\n", Bytes{1})).dtype == "|i1");
    for (const char* d : {"<f16", "<f3", "<i3", "=f4", "|f4", "f4", "<", "", "<M8", "<m8", "|V4", "|S3"})
        CHECK_MESSAGE(
            npy_error(
                make_npy(std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (1,), }\n", Bytes(16)))
                    .find("dtype") != std::string::npos,
            d);
}

TEST_CASE("npy: header syntax is checked strictly") {
    auto ok = [](const std::string& header, std::size_t payload) { return parse(make_npy(header, Bytes(payload))); };
    // What numpy writes, and harmless variants Python's literal syntax allows.
    CHECK(ok("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n", 24).shape ==
          std::vector<std::int64_t>{2, 3});
    CHECK(ok("{\"shape\": (2, 3,), \"descr\": \"<f4\", \"fortran_order\": False}", 24).shape ==
          std::vector<std::int64_t>{2, 3});
    CHECK(ok("{'descr':'<f4','fortran_order':False,'shape':()}\n", 4).shape.empty());
    CHECK(ok(" {'descr': '<f4', 'fortran_order': False, 'shape': ( 5 , )}\n", 20).shape ==
          std::vector<std::int64_t>{5});
    CHECK(parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", kSixFloats, 2)).size() == 6);
    CHECK(parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", kSixFloats, 3)).size() == 6);

    const std::vector<std::string> bad = {
        "",                                                                            // no dict
        "{'descr': '<f4', 'fortran_order': False}",                                    // missing shape
        "{'descr': '<f4', 'shape': (6,)}",                                             // missing fortran_order
        "{'fortran_order': False, 'shape': (6,)}",                                     // missing descr
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}",         // extra key
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}",     // duplicate key
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6)}",                      // int, not tuple
        "{'descr': '<f4', 'fortran_order': False, 'shape': [6]}",                      // list
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}",                    // negative
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6.0,)}",                   // float
        "{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}",                    // leading zero
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}",                  // double comma
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",                    // missing comma
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)",                      // unclosed dict
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x",                   // trailing text
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}",                         // not a bool
        "{'descr': '<f4', 'fortran_order': false, 'shape': (6,)}",                     // not Python
        "{'descr': '<f4\", 'fortran_order': False, 'shape': (6,)}",                    // quotes differ
        "{'descr: '<f4', 'fortran_order': False, 'shape': (6,)}",                      // broken string
        "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}",                 // escapes
        "{'descr': '<f4' 'fortran_order': False, 'shape': (6,)}",                      // missing comma
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",  // overflow
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}\x01",                 // control char
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}\xc3\xa9",             // non-ASCII
    };
    for (const std::string& h : bad) {
        CAPTURE(h);
        CHECK_THROWS_AS(parse(make_npy(h, kSixFloats)), Error);
    }
    // Element count overflow: each dimension fits, the product does not.
    CHECK_THROWS_AS(ok("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 0), Error);
    CHECK_THROWS_AS(ok("{'descr': '<c16', 'fortran_order': False, 'shape': (1152921504606846976,), }", 0), Error);
}

TEST_CASE("npy: magic, version and payload length are checked") {
    const Bytes good = iotest::fixture_bytes("f4_2x3.npy");
    REQUIRE_NOTHROW(parse(good));

    Bytes b = good;
    b[0] = 0x92;
    CHECK(npy_error(b).find("bad magic") != std::string::npos);
    b = good;
    b[3] = 'm';
    CHECK(npy_error(b).find("bad magic") != std::string::npos);
    for (const auto& [major, minor] : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {4, 0}, {2, 1}}) {
        b = good;
        b[6] = static_cast<std::uint8_t>(major);
        b[7] = static_cast<std::uint8_t>(minor);
        CHECK(npy_error(b).find("version") != std::string::npos);
    }
    // The header length must land exactly where the payload starts.
    b = good;
    b[8] = static_cast<std::uint8_t>(b[8] + 4);
    CHECK_THROWS_AS(parse(b), Error);
    b = good;
    b[8] = static_cast<std::uint8_t>(b[8] - 1);
    CHECK_THROWS_AS(parse(b), Error);

    // Every truncation fails, and so does any extra byte.
    for (std::size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        CHECK_THROWS_AS(parse(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))), Error);
    }
    b = good;
    b.push_back(0);
    CHECK(npy_error(b).find("payload is 25 bytes but <f4 (2, 3) needs 24") != std::string::npos);

    // A shape that disagrees with the payload.
    CHECK_THROWS_AS(parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", kSixFloats)),
                    Error);
    CHECK_THROWS_AS(parse(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n", kSixFloats)),
                    Error);
    CHECK_THROWS_AS(parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", kSixFloats)), Error);
    CHECK_THROWS_AS(parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n", kSixFloats)), Error);
}

TEST_CASE("npy: read_npy and write_npy go through files, naming them in errors") {
    iotest::ScratchDir dir;
    const Array a = Array::from<std::int64_t>({3}, std::vector<std::int64_t>{-1, 0, 1LL << 40});
    revgraph::io::write_npy(dir / "a.npy", a);
    CHECK(revgraph::io::read_npy(dir / "a.npy") == a);
    try {
        revgraph::io::read_npy(dir / "missing.npy");
        FAIL("no error");
    } catch (const Error& e) { CHECK(std::string(e.what()).find("missing.npy") != std::string::npos); }
    revgraph::io::write_file_atomic(dir / "short.npy", std::string("\x93NUMPY"));
    try {
        revgraph::io::read_npy(dir / "short.npy");
        FAIL("no error");
    } catch (const Error& e) { CHECK(std::string(e.what()).rfind((dir / "short.npy").string() + ": ", 0) == 0); }
}
