#include "engine/io/npy.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>

#include "engine/io/atomic_file.hpp"

namespace revgraph::io {

// Arrays hold little-endian bytes and typed access is a memcpy, which is only right on a
// little-endian host (every machine this engine targets).
static_assert(std::endian::native == std::endian::little, "revgraph::io assumes a little-endian host");

namespace {

constexpr std::uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kAlign = 64;             // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS

std::size_t kind_itemsize(char kind, std::string_view digits) {
    // The (kind, size) pairs numpy can describe with a plain descriptor, minus long double.
    static constexpr struct {
        char kind;
        const char* digits;
        std::size_t size;
    } known[] = {
        {'b', "1", 1}, {'i', "1", 1}, {'i', "2", 2}, {'i', "4", 4}, {'i', "8", 8}, {'u', "1", 1}, {'u', "2", 2},
        {'u', "4", 4}, {'u', "8", 8}, {'f', "2", 2}, {'f', "4", 4}, {'f', "8", 8}, {'c', "8", 8}, {'c', "16", 16},
    };
    for (const auto& k : known)
        if (k.kind == kind && digits == k.digits) return k.size;
    return 0;
}

// Turns any descriptor numpy might write into the canonical one ("<u1" and ">u1" → "|u1"),
// or explains in one line why it is not supported.
std::string canonical_dtype(std::string_view descr) {
    const std::string quoted = std::string("'").append(descr).append("'");
    if (descr.size() < 2) throw Error("unsupported dtype " + quoted);
    const char order = descr[0];
    const char kind = descr[1];
    if (kind == 'O') throw Error("object arrays (dtype " + quoted + ") are not supported");
    if (order != '<' && order != '>' && order != '|') throw Error("unsupported dtype " + quoted + " (no byte order)");
    const std::size_t size = kind_itemsize(kind, descr.substr(2));
    if (size == 0) throw Error("unsupported dtype " + quoted);
    if (size == 1) return std::string("|").append(descr.substr(1));
    if (order == '>') throw Error("big-endian dtype " + quoted + " is not supported");
    if (order == '|') throw Error("unsupported dtype " + quoted + " (no byte order)");
    return std::string(descr);
}

// --- header dict -------------------------------------------------------------------------
// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
// followed by space padding and a newline. This parser accepts exactly the literal syntax
// numpy's writers can produce (either quote style, any key order, optional trailing commas,
// whitespace between tokens) and rejects everything else.
class HeaderParser {
public:
    explicit HeaderParser(std::string_view text) : s_(text) {}

    struct Result {
        std::string descr;
        bool fortran_order = false;
        std::vector<std::int64_t> shape;
    };

    Result parse() {
        Result r;
        bool have_descr = false, have_fortran = false, have_shape = false;
        skip_ws();
        expect('{');
        for (;;) {
            skip_ws();
            if (peek() == '}') break;
            const std::string key = string_literal();
            skip_ws();
            expect(':');
            skip_ws();
            if (key == "descr") {
                if (have_descr) fail("key 'descr' appears twice");
                if (peek() == '[') fail("structured dtypes are not supported");
                r.descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                if (have_fortran) fail("key 'fortran_order' appears twice");
                r.fortran_order = boolean();
                have_fortran = true;
            } else if (key == "shape") {
                if (have_shape) fail("key 'shape' appears twice");
                r.shape = tuple();
                have_shape = true;
            } else {
                fail("unexpected key '" + key + "'");
            }
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != '}') fail("expected ',' or '}' at offset " + std::to_string(pos_));
        }
        ++pos_;  // '}'
        skip_ws();
        if (pos_ != s_.size()) fail("unexpected text after the dict");
        if (!have_descr || !have_fortran || !have_shape)
            fail("missing key '" +
                 std::string(!have_descr     ? "descr"
                             : !have_fortran ? "fortran_order"
                                             : "shape") +
                 "'");
        return r;
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;

    [[noreturn]] void fail(const std::string& what) const { throw Error("bad header: " + what); }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
        ++pos_;
    }
    std::string string_literal() {
        const char quote = peek();
        if (quote != '\'' && quote != '"') fail("expected a string at offset " + std::to_string(pos_));
        const std::size_t start = ++pos_;
        while (pos_ < s_.size() && s_[pos_] != quote) {
            // Escapes never occur in what numpy writes; refusing them keeps the parser exact.
            if (s_[pos_] == '\\' || s_[pos_] == '\n') fail("unsupported character in a string");
            ++pos_;
        }
        if (pos_ >= s_.size()) fail("unterminated string");
        return std::string(s_.substr(start, pos_++ - start));
    }
    bool boolean() {
        if (s_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (s_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        fail("fortran_order must be True or False");
    }
    std::int64_t integer() {
        const std::size_t start = pos_;
        std::int64_t v = 0;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
            const int d = s_[pos_] - '0';
            if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) fail("shape entry too large");
            v = v * 10 + d;
            ++pos_;
        }
        if (pos_ == start) fail("shape entries must be non-negative integers");
        if (s_[start] == '0' && pos_ - start > 1) fail("shape entry with leading zeros");
        return v;
    }
    // A Python tuple of ints: (), (5,), (3, 4), (3, 4,). "(5)" is an int, not a tuple.
    std::vector<std::int64_t> tuple() {
        expect('(');
        std::vector<std::int64_t> dims;
        bool trailing_comma = false;
        for (;;) {
            skip_ws();
            if (peek() == ')') break;
            dims.push_back(integer());
            skip_ws();
            trailing_comma = false;
            if (peek() == ',') {
                ++pos_;
                trailing_comma = true;
                continue;
            }
            if (peek() != ')') fail("expected ',' or ')' in shape");
        }
        ++pos_;
        if (dims.size() == 1 && !trailing_comma) fail("shape must be a tuple");
        return dims;
    }
};

std::uint32_t read_le(const std::uint8_t* p, int bytes) {
    std::uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

std::size_t dtype_itemsize(std::string_view descr) {
    if (canonical_dtype(descr) != descr) throw Error("non-canonical dtype '" + std::string(descr) + "'");
    return kind_itemsize(descr[1], descr.substr(2));
}

std::int64_t element_count(std::span<const std::int64_t> shape) {
    std::int64_t n = 1;
    for (const std::int64_t d : shape) {
        if (d < 0) throw Error("negative dimension in shape " + Array::shape_string(shape));
        if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
            throw Error("shape " + Array::shape_string(shape) + " is too large");
        n *= d;
    }
    return n;
}

std::string Array::shape_string(std::span<const std::int64_t> shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

Array::Array(std::string dtype_, std::vector<std::int64_t> shape_, std::vector<std::uint8_t> data_)
    : dtype(std::move(dtype_)), shape(std::move(shape_)), data(std::move(data_)) {
    const std::size_t item = dtype_itemsize(dtype);
    const std::int64_t n = element_count(shape);
    if (static_cast<std::uint64_t>(n) > std::numeric_limits<std::uint64_t>::max() / item ||
        static_cast<std::uint64_t>(n) * item != data.size())
        throw Error("array " + dtype + " " + shape_string(shape) + " needs " + std::to_string(n) + "x" +
                    std::to_string(item) + " bytes, got " + std::to_string(data.size()));
}

namespace {

struct ParsedHeader {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::size_t data_start = 0;
};

// The header of a .npy file of `total` bytes whose first bytes are `head` (all of them, or a
// prefix). Throws the Error that explains what is wrong, or returns nothing when `head` ends
// before the header does and `total` leaves room for it (a prefix cannot tell yet).
std::optional<ParsedHeader> parse_header(std::span<const std::uint8_t> head, std::uint64_t total,
                                         const std::string& where) {
    auto fail = [&](const std::string& what) -> Error { return Error(where + ": " + what); };
    const bool whole = head.size() == total;
    if (head.size() < 10 && !whole && total >= 10) return std::nullopt;
    if (head.size() < 10 || std::memcmp(head.data(), kMagic, sizeof kMagic) != 0)
        throw fail("not a .npy file (bad magic)");
    const int major = head[6], minor = head[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        throw fail("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
    // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 (UTF-8 header) in 4.
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    if (total < 8 + len_bytes) throw fail("truncated header");
    if (head.size() < 8 + len_bytes) return std::nullopt;
    const std::size_t header_len = read_le(head.data() + 8, static_cast<int>(len_bytes));
    const std::size_t data_start = 8 + len_bytes + header_len;
    if (total < data_start) throw fail("truncated header");
    if (head.size() < data_start) return std::nullopt;
    const std::string_view header(reinterpret_cast<const char*>(head.data()) + 8 + len_bytes, header_len);
    for (const char c : header)
        if (static_cast<unsigned char>(c) >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
            throw fail("bad header: non-ASCII or control character");

    HeaderParser::Result h;
    std::string dtype;
    try {
        h = HeaderParser(header).parse();
        dtype = canonical_dtype(h.descr);
        element_count(h.shape);
    } catch (const Error& e) { throw fail(e.what()); }
    if (h.fortran_order) {
        // 0-d and 1-d arrays have the same bytes in either order, but numpy only writes
        // fortran_order True for arrays that are not C-contiguous; refuse them all alike.
        throw fail("Fortran-order arrays are not supported (save a C-contiguous array)");
    }
    const std::size_t item = kind_itemsize(dtype[1], std::string_view(dtype).substr(2));
    const std::uint64_t n = static_cast<std::uint64_t>(element_count(h.shape));
    const std::uint64_t payload = total - data_start;
    if (n > std::numeric_limits<std::uint64_t>::max() / item || n * item != payload)
        throw fail(
            "payload is " + std::to_string(payload) + " bytes but " + dtype + " " + Array::shape_string(h.shape) +
            " needs " +
            (n > std::numeric_limits<std::uint64_t>::max() / item ? std::string("more") : std::to_string(n * item)));
    return ParsedHeader{std::move(dtype), std::move(h.shape), data_start};
}

}  // namespace

bool check_npy_head(std::span<const std::uint8_t> head, std::uint64_t total_size, std::string_view source) {
    return parse_header(head, total_size, std::string(source)).has_value();
}

Array parse_npy(std::span<const std::uint8_t> bytes, std::string_view source) {
    ParsedHeader h = *parse_header(bytes, bytes.size(), std::string(source));
    return Array(std::move(h.dtype), std::move(h.shape),
                 std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(h.data_start), bytes.end()));
}

Array read_npy(const std::filesystem::path& path) {
    const std::vector<std::uint8_t> bytes = read_file(path);
    return parse_npy(bytes, path.string());
}

std::vector<std::uint8_t> serialize_npy(const Array& array) {
    // Re-check the invariants so that a hand-assembled Array cannot produce an unreadable file.
    const std::size_t item = dtype_itemsize(array.dtype);
    const std::int64_t n = element_count(array.shape);
    if (static_cast<std::uint64_t>(n) > std::numeric_limits<std::uint64_t>::max() / item ||
        static_cast<std::uint64_t>(n) * item != array.data.size())
        throw Error("cannot save array " + array.dtype + " " + Array::shape_string(array.shape) + ": it holds " +
                    std::to_string(array.data.size()) + " bytes");
    // The same text numpy 1.24 writes, including the spare spaces it leaves so that the
    // first axis can grow in place, so our files are byte-identical to np.save's.
    std::string header =
        "{'descr': '" + array.dtype + "', 'fortran_order': False, 'shape': " + Array::shape_string(array.shape) + ", }";
    if (!array.shape.empty())
        header.append(kGrowthAxisDigits - std::min(kGrowthAxisDigits, std::to_string(array.shape[0]).size()), ' ');
    // Pad with spaces and end with '\n' so that the data starts on a 64-byte boundary.
    const std::size_t prefix_v1 = sizeof kMagic + 2 + 2;
    std::size_t hlen = header.size() + 1;
    std::size_t total = hlen + (kAlign - (prefix_v1 + hlen) % kAlign);
    int major = 1;
    std::size_t prefix = prefix_v1;
    if (total > 0xFFFF) {  // does not fit version 1.0's 2-byte length
        major = 2;
        prefix = sizeof kMagic + 2 + 4;
        total = hlen + (kAlign - (prefix + hlen) % kAlign);
    }
    header.append(total - hlen, ' ');
    header.push_back('\n');

    // Sized once and filled with memcpy (GCC 12 warns falsely about insert() after reserve()).
    std::vector<std::uint8_t> out(prefix + header.size() + array.data.size());
    std::memcpy(out.data(), kMagic, sizeof kMagic);
    out[6] = static_cast<std::uint8_t>(major);
    out[7] = 0;
    for (std::size_t i = 0; i < prefix - 8; ++i) out[8 + i] = static_cast<std::uint8_t>(total >> (8 * i));
    std::memcpy(out.data() + prefix, header.data(), header.size());
    if (!array.data.empty()) std::memcpy(out.data() + prefix + header.size(), array.data.data(), array.data.size());
    return out;
}

void write_npy(const std::filesystem::path& path, const Array& array) { write_file_atomic(path, serialize_npy(array)); }

}  // namespace revgraph::io
