#include "engine/io/idx.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "engine/classes.hpp"
#include "engine/error.hpp"
#include "engine/io/md5.hpp"
#include "engine/io/sha256.hpp"

namespace revgraph::io {

namespace {

constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
// Bytes are moved (read, inflated, copied) in slices of this size; inflated content is hashed slice
// by slice, while it is still in the cache it was just written to.
constexpr std::size_t kSlice = std::size_t{1} << 18;

std::uint32_t be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::string limit_text(std::uint64_t bytes) {
    if (bytes % (std::uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
    if (bytes % (std::uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

bool is_gzip(std::span<const std::uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

std::string magic_name(std::uint32_t magic) {
    return magic == kImagesMagic   ? "an images file (2051)"
           : magic == kLabelsMagic ? "a labels file (2049)"
                                   : "magic " + std::to_string(magic);
}

enum class Kind { images, labels };

// Sizes `v` to n bytes for overwriting. A large buffer asks for transparent huge pages first, so that
// filling it takes a few dozen page faults instead of one per 4 KiB (where the kernel allows it).
void size_for_overwrite(std::vector<std::uint8_t>& v, std::size_t n) {
    if (n > v.capacity()) {
        v.reserve(n);
        constexpr std::uintptr_t kHuge = std::uintptr_t{1} << 21;
        if (n >= 4 * kHuge) {
            const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
            const auto end = (reinterpret_cast<std::uintptr_t>(v.data()) + n) & ~(kHuge - 1);
            if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint only
        }
    }
    v.resize(n);
}

// The IDX content as it arrives in order (from a raw file, or from inflate): the header into a small
// array, then the body straight into its final buffer, sized from the header once that is complete.
// Every problem is found only at finish(), in the order the old two-step reader (decompress all,
// then parse) reported them, so that error messages do not depend on how the bytes arrived.
class ContentSink {
public:
    // plausible_body: how much body the input can hold at most (its size for raw bytes; a bound for
    // gzip), so that a header claiming 2^32 images never allocates more than the input could fill.
    ContentSink(Kind kind, std::string where, bool hash, std::uint64_t plausible_body)
        : kind_(kind), where_(std::move(where)), hash_(hash), plausible_(plausible_body) {}

    // Where the next bytes go: never empty, at most one slice.
    std::span<std::uint8_t> space() {
        if (header_fill_ < header_size()) return {header_ + header_fill_, header_size() - header_fill_};
        if (body_fill_ < expected_) {
            if (body_fill_ == body_.size()) {
                const std::uint64_t grown = std::max<std::uint64_t>(2 * body_.size(), kSlice);
                size_for_overwrite(body_, static_cast<std::size_t>(std::min(expected_, grown)));
            }
            return {body_.data() + body_fill_, std::min<std::size_t>(body_.size() - body_fill_, kSlice)};
        }
        return {overflow_, sizeof overflow_};  // past what the header promises: counted, not kept
    }

    void produced(std::size_t n) {
        const std::uint8_t* p = nullptr;
        if (header_fill_ < header_size()) {
            p = header_ + header_fill_;
            header_fill_ += n;
            if (header_fill_ == header_size()) parse_header();
        } else if (body_fill_ < expected_) {
            p = body_.data() + body_fill_;
            body_fill_ += n;
        } else {
            p = overflow_;
            overflow_bytes_ += n;
        }
        if (hash_) sha256_.update(p, n);
        total_ += n;
    }

    std::uint64_t total() const { return total_; }
    std::string content_sha256() { return sha256_.hex_digest(); }

    // Checks the content and returns the body (pixels or labels); throws the first problem found.
    std::vector<std::uint8_t> finish() {
        const bool images = kind_ == Kind::images;
        const char* what = images ? "images" : "labels";
        if (total_ < 4) throw Error(where_ + ": not an IDX " + what + " file (shorter than its magic number)");
        const std::uint32_t magic = be32(header_);
        const std::uint32_t want = images ? kImagesMagic : kLabelsMagic;
        if (magic != want)
            throw Error(where_ + ": expected an IDX " + what + " file (magic " + std::to_string(want) + "), found " +
                        magic_name(magic));
        if (header_fill_ < header_size()) throw Error(where_ + ": truncated IDX header");
        if (images) {
            const std::uint32_t rows = be32(header_ + 8), cols = be32(header_ + 12);
            if (rows != kMnistSide || cols != kMnistSide)
                throw Error(where_ + ": images are " + std::to_string(rows) + "x" + std::to_string(cols) +
                            ", expected 28x28");
        }
        const std::uint64_t has = total_ - header_size();
        if (has != expected_)
            throw Error(where_ + ": " + std::to_string(count()) + (images ? " images need " : " labels need ") +
                        std::to_string(expected_) + (images ? " pixel bytes" : " bytes") + ", the file has " +
                        std::to_string(has));
        body_.resize(static_cast<std::size_t>(body_fill_));
        if (!images) check_classes(std::span<const std::uint8_t>(body_), where_);
        return std::move(body_);
    }

    std::uint32_t count() const { return be32(header_ + 4); }

    // What was kept so far: all the content unless more came than the header promises (which
    // finish() refuses).
    std::span<const std::uint8_t> header_bytes() const { return {header_, header_fill_}; }
    std::span<const std::uint8_t> body_bytes() const { return {body_.data(), static_cast<std::size_t>(body_fill_)}; }
    // The body's buffer once it holds all the header promises, so that it will not move again;
    // nullptr before (or when the input could not fill it, and it would have to grow).
    const std::uint8_t* final_body() const {
        return expected_ > 0 && body_.size() == expected_ ? body_.data() : nullptr;
    }
    std::uint64_t expected_body() const { return expected_; }

private:
    std::size_t header_size() const { return kind_ == Kind::images ? 16 : 8; }

    // A header that finish() will refuse expects no body: its bytes are only counted.
    void parse_header() {
        const bool images = kind_ == Kind::images;
        if (be32(header_) != (images ? kImagesMagic : kLabelsMagic)) return;
        if (images && (be32(header_ + 8) != kMnistSide || be32(header_ + 12) != kMnistSide)) return;
        expected_ = std::uint64_t{count()} * (images ? kMnistSide * kMnistSide : 1);
        size_for_overwrite(body_, static_cast<std::size_t>(std::min(expected_, plausible_)));
    }

    Kind kind_;
    std::string where_;
    bool hash_;
    std::uint64_t plausible_;
    std::uint8_t header_[16]{};
    std::size_t header_fill_ = 0;
    std::uint64_t expected_ = 0;  // body bytes the header promises (0 until it is complete and valid)
    std::vector<std::uint8_t> body_;
    std::uint64_t body_fill_ = 0;
    std::uint8_t overflow_[1 << 16];
    std::uint64_t overflow_bytes_ = 0;
    std::uint64_t total_ = 0;
    Sha256 sha256_;
};

// All the bytes into one growing vector (gunzip()).
// Memory stays within the cap (plus the one byte that shows it is passed), never twice it.
class VectorSink {
public:
    VectorSink(std::uint64_t reserve, std::uint64_t max_bytes) : max_(max_bytes) {
        // One byte more than the hint: the byte that shows the end (or the cap) fits without a move.
        out_.reserve(static_cast<std::size_t>(std::min(reserve, max_bytes) + 1));
    }
    std::span<std::uint8_t> space() {
        if (fill_ == out_.size()) {
            const std::uint64_t grown =
                std::max<std::uint64_t>({2 * out_.size(), out_.capacity(), std::uint64_t{1} << 16});
            size_for_overwrite(out_, static_cast<std::size_t>(std::min(grown, max_ + 1)));
        }
        return {out_.data() + fill_, out_.size() - fill_};
    }
    void produced(std::size_t n) { fill_ += n; }
    std::uint64_t total() const { return fill_; }
    std::vector<std::uint8_t> take() {
        out_.resize(fill_);
        return std::move(out_);
    }

private:
    std::uint64_t max_;
    std::vector<std::uint8_t> out_;
    std::size_t fill_ = 0;
};

// The size the last member's trailer records (mod 2^32): a hint only (a truncated or hostile file may
// lie), so it is used only where deflate could produce that much (at most about 1032 bytes per input
// byte).
std::uint64_t plausible_gunzip_size(std::span<const std::uint8_t> in) {
    if (in.size() < 18) return 0;
    const std::size_t t = in.size() - 4;
    const std::uint64_t hint = std::uint64_t{in[t]} | std::uint64_t{in[t + 1]} << 8 | std::uint64_t{in[t + 2]} << 16 |
                               std::uint64_t{in[t + 3]} << 24;
    return hint <= std::uint64_t{in.size()} * 1032 ? hint : 0;
}

// Inflates every gzip member of `in` into `sink`, one slice at a time; throws "<where>: ..." on
// corruption, or when the output would pass `max_bytes` (checked before the sink keeps a byte past it).
template <typename Sink>
void inflate_into(std::span<const std::uint8_t> in, const std::string& where, std::uint64_t max_bytes, Sink& sink) {
    z_stream z{};
    if (::inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(where + ": cannot initialise zlib");
    std::size_t in_pos = 0;
    std::string problem;
    // gzip allows several members back to back; each ends in its own CRC-32 and length, which zlib
    // checks.
    while (problem.empty()) {
        const std::size_t in_chunk = std::min<std::size_t>(in.size() - in_pos, UINT_MAX);
        const std::span<std::uint8_t> space = sink.space();
        // One byte past the cap is room enough to see that the cap is passed.
        const std::uint64_t room = std::min<std::uint64_t>({space.size(), kSlice, max_bytes - sink.total() + 1});
        z.next_in = const_cast<Bytef*>(in.data() + in_pos);
        z.avail_in = static_cast<uInt>(in_chunk);
        z.next_out = space.data();
        z.avail_out = static_cast<uInt>(room);
        const int ret = ::inflate(&z, Z_NO_FLUSH);
        in_pos += in_chunk - z.avail_in;
        const std::size_t produced = static_cast<std::size_t>(room) - z.avail_out;
        if (produced > max_bytes - sink.total()) {
            problem = "decompresses to more than " + limit_text(max_bytes);
            break;
        }
        sink.produced(produced);
        if (ret == Z_STREAM_END) {
            if (in_pos == in.size()) break;
            if (!is_gzip(in.subspan(in_pos)))
                problem = "unexpected bytes after the gzip data";
            else
                ::inflateReset(&z);
        } else if (ret == Z_BUF_ERROR && in_pos == in.size())
            problem = "gzip data is truncated";
        else if (ret != Z_OK)
            problem = std::string("gzip data is corrupt (") + (z.msg ? z.msg : "zlib error") + ")";
    }
    ::inflateEnd(&z);
    if (!problem.empty()) throw Error(where + ": " + problem);
}

// Raw bytes into the sink, a slice at a time.
void copy_into(std::span<const std::uint8_t> in, ContentSink& sink) {
    for (std::size_t pos = 0; pos < in.size();) {
        const std::span<std::uint8_t> space = sink.space();
        const std::size_t n = std::min(space.size(), in.size() - pos);
        std::memcpy(space.data(), in.data() + pos, n);
        sink.produced(n);
        pos += n;
    }
}

std::vector<std::uint8_t> decode(std::span<const std::uint8_t> bytes, std::string_view source, Kind kind,
                                 std::uint32_t* count) {
    const std::string where(source);
    std::vector<std::uint8_t> body;
    if (is_gzip(bytes)) {
        ContentSink sink(kind, where, false, std::max(plausible_gunzip_size(bytes), std::uint64_t{kSlice}));
        inflate_into(bytes, where, kMaxGunzipBytes, sink);
        body = sink.finish();
        *count = sink.count();
    } else {
        ContentSink sink(kind, where, false, bytes.size());
        copy_into(bytes, sink);
        body = sink.finish();
        *count = sink.count();
    }
    return body;
}

// An open file, closed on every path.
class InputFile {
public:
    explicit InputFile(const std::filesystem::path& path) : path_(path.string()) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) throw Error("cannot open " + path_ + ": " + std::strerror(errno));
        // Files and pipes only: a directory or a device (/dev/zero, a terminal) would fail late or
        // never end.
        struct stat st {};
        if (::fstat(fd_, &st) == 0) {
            if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
                ::close(fd_);
                throw Error("cannot read " + path_ + ": " +
                            (S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file or pipe"));
            }
            if (S_ISREG(st.st_mode)) size_ = static_cast<std::uint64_t>(st.st_size);
        }
    }
    ~InputFile() { ::close(fd_); }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    // Up to n bytes; 0 at the end.
    std::size_t read(std::uint8_t* p, std::size_t n) {
        for (;;) {
            const ssize_t got = ::read(fd_, p, n);
            if (got >= 0) return static_cast<std::size_t>(got);
            if (errno != EINTR) throw Error("cannot read " + path_ + ": " + std::strerror(errno));
        }
    }
    // The size of a regular file (a hint: the file may change while it is read).
    std::optional<std::uint64_t> size() const { return size_; }

private:
    std::string path_;
    int fd_ = -1;
    std::optional<std::uint64_t> size_;
};

// The md5 of a file's stored bytes on a thread of its own, beside the read, the sha256 and the
// inflate (the hashes are the slowest part of reading MNIST; a second core takes this one): the head
// at once, then the body as the reader says how much of a buffer that no longer moves is final
// (advance), so a raw file is hashed as it arrives; bytes already all in place are simply the head,
// or a body finished at once. Where no thread is to be had, finish() hashes on the caller's thread.
// The bytes must stay unchanged until finish().
class Md5Beside {
public:
    Md5Beside(std::span<const std::uint8_t> head, const std::uint8_t* body) : head_(head), body_(body) {
        try {
            thread_ = std::thread([this] { run(); });
        } catch (const std::system_error&) {}
    }
    ~Md5Beside() { stop(); }
    Md5Beside(const Md5Beside&) = delete;
    Md5Beside& operator=(const Md5Beside&) = delete;

    // Bytes [0, n) of the body are final.
    void advance(std::size_t n) {
        state_.store(n, std::memory_order_release);
        state_.notify_one();
    }
    // The md5 of the head and body bytes [0, n).
    std::string finish(std::size_t n) {
        stop(n);
        if (!ran_) run();  // no thread was started: the caller hashes it all
        if (error_) std::rethrow_exception(error_);
        return hex_;
    }

private:
    static constexpr std::uint64_t kDone = std::uint64_t{1} << 63;

    void stop(std::optional<std::size_t> n = std::nullopt) {
        if (!thread_.joinable()) {
            if (n) state_.store(*n | kDone);
            return;
        }
        state_.store((n ? *n : hashed_limit()) | kDone, std::memory_order_release);
        state_.notify_one();
        thread_.join();
    }
    std::uint64_t hashed_limit() const { return state_.load(std::memory_order_acquire) & ~kDone; }

    void run() noexcept {
        ran_ = true;
        try {
            Md5 md5;
            md5.update(head_.data(), head_.size());
            std::uint64_t hashed = 0;
            for (;;) {
                const std::uint64_t s = state_.load(std::memory_order_acquire);
                const std::uint64_t ready = s & ~kDone;
                if (ready > hashed) {
                    md5.update(body_ + hashed, static_cast<std::size_t>(ready - hashed));
                    hashed = ready;
                } else if (s & kDone) {
                    break;
                } else {
                    state_.wait(s, std::memory_order_acquire);
                }
            }
            hex_ = md5.hex_digest();
        } catch (...) { error_ = std::current_exception(); }
    }

    std::span<const std::uint8_t> head_;
    const std::uint8_t* body_;
    std::atomic<std::uint64_t> state_{0};
    bool ran_ = false;
    std::string hex_;
    std::exception_ptr error_;
    std::thread thread_;
};

// Reads the file once, straight into where it stays: a raw file into the sink, a gzip file into one
// buffer that is then inflated into the sink (which hashes the content as it is produced). The md5
// of the stored bytes runs beside their sha256 (and the inflate), in RAM at memory speed rather
// than slice by slice, so that it can use the second core.
std::vector<std::uint8_t> read_and_decode(const std::filesystem::path& path, Kind kind, IdxFileDigests& d,
                                          std::uint32_t* count) {
    InputFile file(path);
    d = IdxFileDigests{};
    d.path = path.string();
    std::uint8_t lead[2];
    std::size_t lead_n = 0;
    while (lead_n < 2) {
        const std::size_t got = file.read(lead + lead_n, 2 - lead_n);
        if (got == 0) break;
        lead_n += got;
    }
    std::vector<std::uint8_t> body;
    if (is_gzip({lead, lead_n})) {
        d.compressed = true;
        std::vector<std::uint8_t> stored;
        size_for_overwrite(stored, static_cast<std::size_t>(std::max<std::uint64_t>(file.size().value_or(0), 2)));
        std::memcpy(stored.data(), lead, 2);
        std::size_t fill = 2;
        // At most kMaxGunzipBytes + 1 bytes held: a FIFO or an endless pipe named as the file is
        // refused, not read until memory runs out (the .gz of any file within the cap is smaller).
        const std::size_t cap = static_cast<std::size_t>(kMaxGunzipBytes);
        for (;;) {
            if (fill == stored.size()) size_for_overwrite(stored, std::min(2 * stored.size() + kSlice, cap + 1));
            const std::size_t got = file.read(stored.data() + fill, std::min(stored.size() - fill, kSlice));
            if (got == 0) break;
            fill += got;
            if (fill > cap)
                throw Error(d.path + ": a gzip file of more than " + std::to_string(kMaxGunzipBytes) +
                            " bytes (a bound far above MNIST's; a pipe or a wrong file?)");
        }
        stored.resize(fill);
        d.stored_bytes = fill;
        Md5Beside md5(stored, nullptr);  // all of it in place: the head, no body
        Sha256 sha256;
        sha256.update(stored.data(), stored.size());
        d.sha256 = sha256.hex_digest();
        ContentSink sink(kind, d.path, true, std::max(plausible_gunzip_size(stored), std::uint64_t{kSlice}));
        inflate_into(stored, d.path, kMaxGunzipBytes, sink);
        d.md5 = md5.finish(0);
        d.content_bytes = sink.total();
        d.content_sha256 = sink.content_sha256();
        body = sink.finish();
        *count = sink.count();
    } else {
        const std::uint64_t size = file.size().value_or(0);
        ContentSink sink(kind, d.path, false, size > 16 ? size - (kind == Kind::images ? 16 : 8) : kSlice);
        const std::span<std::uint8_t> first = sink.space();
        std::memcpy(first.data(), lead, lead_n);  // the header has room for at least 8 bytes
        sink.produced(lead_n);
        // A large body whose buffer is final is md5-hashed as it arrives, else once it is all read.
        std::unique_ptr<Md5Beside> following;
        for (;;) {
            const std::span<std::uint8_t> space = sink.space();
            const std::size_t got = file.read(space.data(), space.size());
            if (got == 0) break;
            sink.produced(got);
            if (!following && sink.final_body() && sink.expected_body() >= (std::uint64_t{1} << 20))
                following = std::make_unique<Md5Beside>(sink.header_bytes(), sink.final_body());
            if (following) following->advance(sink.body_bytes().size());
        }
        d.stored_bytes = d.content_bytes = sink.total();
        // Both digests are of the bytes kept; where more came than that, finish() refuses the file.
        if (!following) following = std::make_unique<Md5Beside>(sink.header_bytes(), sink.body_bytes().data());
        Sha256 sha256;
        sha256.update(sink.header_bytes().data(), sink.header_bytes().size());
        sha256.update(sink.body_bytes().data(), sink.body_bytes().size());
        d.sha256 = d.content_sha256 = sha256.hex_digest();
        d.md5 = following->finish(sink.body_bytes().size());
        body = sink.finish();
        *count = sink.count();
    }
    return body;
}

}  // namespace

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, std::string_view source, std::uint64_t max_bytes) {
    // The buffer starts at the trailer's hint and grows by doubling, never past the cap.
    VectorSink sink(plausible_gunzip_size(in), max_bytes);
    inflate_into(in, std::string(source), max_bytes, sink);
    return sink.take();
}

IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source) {
    std::uint32_t count = 0;
    std::vector<std::uint8_t> pixels = decode(bytes, source, Kind::images, &count);
    return {count, std::move(pixels), {}};
}

std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source) {
    std::uint32_t count = 0;
    return decode(bytes, source, Kind::labels, &count);
}

IdxImages read_idx_images(const std::filesystem::path& path) {
    IdxImages images;
    std::uint32_t count = 0;
    images.pixels = read_and_decode(path, Kind::images, images.digests, &count);
    images.count = count;
    return images;
}

IdxLabels read_idx_labels_with_digests(const std::filesystem::path& path) {
    IdxLabels labels;
    std::uint32_t count = 0;
    labels.labels = read_and_decode(path, Kind::labels, labels.digests, &count);
    return labels;
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
    return read_idx_labels_with_digests(path).labels;
}

MnistSet read_mnist(const std::filesystem::path& images, const std::filesystem::path& labels) {
    MnistSet set;
    set.images = read_idx_images(images);  // first, so that its problems are reported first
    IdxLabels l = read_idx_labels_with_digests(labels);
    set.labels = std::move(l.labels);
    set.labels_digests = std::move(l.digests);
    if (static_cast<std::uint64_t>(set.images.count) != set.labels.size())
        throw Error(images.string() + " has " + std::to_string(set.images.count) + " images but " + labels.string() +
                    " has " + std::to_string(set.labels.size()) + " labels");
    return set;
}

}  // namespace revgraph::io
