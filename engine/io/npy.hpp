#pragma once
// .npy arrays as numpy writes them (format versions 1.0, 2.0, 3.0): little-endian, C order,
// plain numeric dtypes. An Array keeps the raw bytes, so hashing (docs/spec.md §7) and writing never
// reinterpret the values; typed access goes through from<T>() / as<T>(), which check the dtype.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/error.hpp"

namespace revgraph::io {

// numpy's descriptor for a C++ element type ("<f4", "|u1", ...); only the types below exist.
template <typename T>
struct Dtype;
template <>
struct Dtype<float> {
    static constexpr const char* descr = "<f4";
};
template <>
struct Dtype<double> {
    static constexpr const char* descr = "<f8";
};
template <>
struct Dtype<std::int8_t> {
    static constexpr const char* descr = "|i1";
};
template <>
struct Dtype<std::uint8_t> {
    static constexpr const char* descr = "|u1";
};
template <>
struct Dtype<std::int16_t> {
    static constexpr const char* descr = "<i2";
};
template <>
struct Dtype<std::uint16_t> {
    static constexpr const char* descr = "<u2";
};
template <>
struct Dtype<std::int32_t> {
    static constexpr const char* descr = "<i4";
};
template <>
struct Dtype<std::uint32_t> {
    static constexpr const char* descr = "<u4";
};
template <>
struct Dtype<std::int64_t> {
    static constexpr const char* descr = "<i8";
};
template <>
struct Dtype<std::uint64_t> {
    static constexpr const char* descr = "<u8";
};

// Bytes per element of a canonical descriptor; throws Error for anything unsupported
// (big-endian, object, string, structured, unknown). Supported kinds: b1, i1-i8, u1-u8,
// f2/f4/f8, c8/c16.
std::size_t dtype_itemsize(std::string_view descr);

// Number of elements of a shape (1 for a 0-d array); throws Error on negative or overflow.
std::int64_t element_count(std::span<const std::int64_t> shape);

struct Array {
    std::string dtype;                // canonical numpy descriptor: "<f4", "<i8", "|u1", "|b1" ...
    std::vector<std::int64_t> shape;  // empty for a 0-d array
    std::vector<std::uint8_t> data;   // raw little-endian bytes in C order

    Array() = default;
    // Checks that dtype is supported and data holds exactly size()*itemsize() bytes.
    Array(std::string dtype, std::vector<std::int64_t> shape, std::vector<std::uint8_t> data);

    std::int64_t size() const { return element_count(shape); }
    std::size_t itemsize() const { return dtype_itemsize(dtype); }

    template <typename T>
    static Array from(std::vector<std::int64_t> shape, std::span<const T> values) {
        static_assert(std::is_arithmetic_v<T>);
        const std::int64_t n = element_count(shape);
        if (n != static_cast<std::int64_t>(values.size()))
            throw Error("array of shape " + shape_string(shape) + " needs " + std::to_string(n) + " values, got " +
                        std::to_string(values.size()));
        std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
        if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
        return Array(Dtype<T>::descr, std::move(shape), std::move(bytes));
    }
    template <typename T>
    static Array from(std::vector<std::int64_t> shape, const std::vector<T>& values) {
        return from<T>(std::move(shape), std::span<const T>(values));
    }

    // A copy of the values; throws Error when the dtype is not T's.
    template <typename T>
    std::vector<T> as() const {
        static_assert(std::is_arithmetic_v<T>);
        if (dtype != Dtype<T>::descr) throw Error("array has dtype " + dtype + ", expected " + Dtype<T>::descr);
        std::vector<T> out(data.size() / sizeof(T));
        if (!data.empty()) std::memcpy(out.data(), data.data(), data.size());
        return out;
    }

    bool operator==(const Array&) const = default;

    static std::string shape_string(std::span<const std::int64_t> shape);  // "(3, 4)", "(5,)", "()"
};

// Parses a whole .npy file; `source` names it in error messages ("train.npz:x.npy").
Array parse_npy(std::span<const std::uint8_t> bytes, std::string_view source);
Array read_npy(const std::filesystem::path& path);

// For a reader that holds only the first bytes `head` of a .npy file of `total_size` bytes
// (an archive member not yet inflated): throws the Error parse_npy would throw for the whole
// file when the header is malformed or declares a payload other than what `total_size` leaves;
// returns false when `head` ends before the header does, true when the header checked out.
bool check_npy_head(std::span<const std::uint8_t> head, std::uint64_t total_size, std::string_view source);

// The bytes numpy 1.24's np.save would write for the same array (version 1.0, or 2.0 when
// the header does not fit 1.0).
std::vector<std::uint8_t> serialize_npy(const Array& array);
void write_npy(const std::filesystem::path& path, const Array& array);  // atomic

}  // namespace revgraph::io
