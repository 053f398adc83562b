#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/data/draws.hpp"
#include "engine/data/embedded.hpp"
#include "engine/data/resize.hpp"
#include "engine/error.hpp"
#include "engine/inputs.hpp"
#include "engine/io/sha256.hpp"
#include "vectors.hpp"

using namespace revgraph::data;

namespace {

const nlohmann::json& permutation_vector(std::uint64_t seed, std::int64_t n) {
    for (const auto& p : revgraph::test::data_vectors()["permutations"])
        if (p["seed"].get<std::uint64_t>() == seed && p["n"].get<std::int64_t>() == n) return p;
    throw std::runtime_error("no permutation vector");
}

// sha256 of train_indices then test_indices as int64 (little-endian on every target here).
std::string sha256_of_indices(const TaskData& d) {
    std::vector<std::int64_t> all = d.train_indices;
    all.insert(all.end(), d.test_indices.begin(), d.test_indices.end());
    return revgraph::io::sha256_hex(all);
}

// Image i carries its index in its first three bytes; label i % 10.
struct Synthetic {
    std::vector<std::uint8_t> images, labels;
    explicit Synthetic(std::size_t n) : images(n * 784), labels(n) {
        for (std::size_t i = 0; i < n; ++i) {
            std::uint8_t* im = images.data() + i * 784;
            im[0] = static_cast<std::uint8_t>(i);
            im[1] = static_cast<std::uint8_t>(i >> 8);
            im[2] = static_cast<std::uint8_t>(i >> 16);
            im[400] = static_cast<std::uint8_t>(i * 7);
            labels[i] = static_cast<std::uint8_t>(i % 10);
        }
    }
};

// Rows are the resized source images and labels of their indices; train and test are disjoint.
void check_rows(const TaskData& d, const std::vector<std::uint8_t>& images, const std::vector<std::uint8_t>& labels) {
    const std::size_t n = labels.size();
    std::vector<int> seen(n, 0);
    float want[81];
    auto check = [&](const std::vector<std::int64_t>& idx, const std::vector<std::int64_t>& lab,
                     const std::vector<float>& img) {
        REQUIRE(lab.size() == idx.size());
        REQUIRE(img.size() == idx.size() * 81);
        bool rows_ok = true, labels_ok = true;
        for (std::size_t r = 0; r < idx.size(); ++r) {
            REQUIRE(idx[r] >= 0);
            REQUIRE(static_cast<std::size_t>(idx[r]) < n);
            const auto src = static_cast<std::size_t>(idx[r]);
            ++seen[src];
            labels_ok = labels_ok && lab[r] == labels[src];
            resize_28_to_9(images.data() + src * 784, want);
            rows_ok = rows_ok && std::memcmp(want, img.data() + r * 81, sizeof want) == 0;
        }
        CHECK(labels_ok);
        CHECK(rows_ok);
    };
    check(d.train_indices, d.train_labels, d.train_images);
    check(d.test_indices, d.test_labels, d.test_images);
    std::size_t once = 0, more = 0;
    for (const int s : seen) {
        once += s == 1;
        more += s > 1;
    }
    CHECK(more == 0u);
    CHECK(once == d.train_indices.size() + d.test_indices.size());
}

}  // namespace

TEST_CASE("mnist_medium_draw: numpy's permutation(60000) for the published seeds") {
    const Synthetic s(60000);
    for (const std::uint64_t seed : {2026091400ull, 2026091410ull}) {
        CAPTURE(seed);
        const TaskData d = mnist_medium_draw(s.images, s.labels, seed);
        REQUIRE(d.train_count() == 10000);
        REQUIRE(d.test_count() == 10000);
        const auto& v = permutation_vector(seed, 60000);
        for (std::size_t k = 0; k < 20; ++k) CHECK(d.train_indices[k] == v["first20"][k].get<std::int64_t>());
        CHECK(sha256_of_indices(d) == v["used_sha256"].get<std::string>());
        check_rows(d, s.images, s.labels);
    }
}

TEST_CASE("mnist_medium_draw: the same seed gives the same bytes, another seed another draw") {
    const Synthetic s(20000);  // the smallest set a medium draw accepts: all of it is used
    const TaskData a = mnist_medium_draw(s.images, s.labels, 5);
    const TaskData b = mnist_medium_draw(s.images, s.labels, 5);
    const TaskData c = mnist_medium_draw(s.images, s.labels, 6);
    CHECK(a.train_images == b.train_images);
    CHECK(a.test_indices == b.test_indices);
    CHECK(a.train_indices != c.train_indices);
    check_rows(a, s.images, s.labels);  // with n = 20000, train + test cover every image once
}

TEST_CASE("split_draw: bad inputs are rejected") {
    const Synthetic s(100);
    CHECK_THROWS_AS(mnist_medium_draw(s.images, s.labels, 1), revgraph::Error);  // fewer than 20000
    CHECK_THROWS_AS(split_draw(std::span(s.images).subspan(1), s.labels, 1, 10, 10), revgraph::Error);
    CHECK_THROWS_AS(split_draw(s.images, s.labels, 1, 60, 41), revgraph::Error);
    CHECK_THROWS_AS(split_draw(s.images, s.labels, 1, 0, 10), revgraph::Error);
    std::vector<std::uint8_t> bad = s.labels;
    bad[37] = 10;
    CHECK_THROWS_AS(split_draw(s.images, bad, 1, 10, 10), revgraph::Error);
    const TaskData d = split_draw(s.images, s.labels, 1, 60, 40);
    CHECK(d.train_count() == 60);
    CHECK(d.test_count() == 40);
    check_rows(d, s.images, s.labels);
}

TEST_CASE("labels outside 0..9: the draws and the task inputs name the first, with its index, in one wording") {
    const Synthetic s(100);
    std::vector<std::uint8_t> bad = s.labels;
    bad[37] = 10;
    bad[60] = 200;
    std::string said;
    try {
        DrawSource source(s.images, bad);
    } catch (const revgraph::Error& e) { said = e.what(); }
    CHECK(said == "draw: label 10 at index 37 is outside 0..9");
    said.clear();
    try {
        revgraph::TaskInputs(std::vector<float>(3 * 81, 0.f), {0, 9, -1}, std::vector<float>(81, 0.f)).validate();
    } catch (const revgraph::Error& e) { said = e.what(); }
    CHECK(said == "input: train label -1 at index 2 is outside 0..9");
}

TEST_CASE("DrawSource: shared by threads, its draws are split_draw's, bit for bit") {
    // Real digits (the embedded 10,000), draws of 3,000 + 3,000 that overlap, so that rows resized
    // for one draw are reused by others, some of them while another thread resizes them.
    const Digits28& digits = embedded_digits();
    const DrawSource source(digits.images, digits.labels);
    CHECK(source.size() == 10000);
    constexpr int kDraws = 8;
    std::vector<TaskData> shared(kDraws);
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int i = t; i < kDraws; i += 4)
                    shared[static_cast<std::size_t>(i)] =
                        source.split_draw(100 + static_cast<std::uint64_t>(i), 3000, 3000);
            });
    }
    for (int i = 0; i < kDraws; ++i) {
        CAPTURE(i);
        const TaskData alone =
            split_draw(digits.images, digits.labels, 100 + static_cast<std::uint64_t>(i), 3000, 3000);
        const TaskData& d = shared[static_cast<std::size_t>(i)];
        CHECK(d.train_indices == alone.train_indices);
        CHECK(d.test_indices == alone.test_indices);
        CHECK(d.train_labels == alone.train_labels);
        CHECK(d.test_labels == alone.test_labels);
        CHECK(std::memcmp(d.train_images.data(), alone.train_images.data(), d.train_images.size() * 4) == 0);
        CHECK(std::memcmp(d.test_images.data(), alone.test_images.data(), d.test_images.size() * 4) == 0);
    }
    check_rows(shared[0], digits.images, digits.labels);
    // The same checks as split_draw's.
    CHECK_THROWS_AS(source.split_draw(1, 9000, 1001), revgraph::Error);
    std::vector<std::uint8_t> bad = digits.labels;
    bad[5] = 11;
    CHECK_THROWS_AS(DrawSource(digits.images, bad), revgraph::Error);
    CHECK_THROWS_AS(DrawSource(std::span(digits.images).subspan(1), digits.labels), revgraph::Error);
}

TEST_CASE("embedded_default_task: 5,000 / 5,000 split of the embedded digits by permutation(10000)") {
    CHECK(kEmbeddedSplitSeed == 11u);
    const TaskData d = embedded_default_task();
    REQUIRE(d.train_count() == 5000);
    REQUIRE(d.test_count() == 5000);
    const auto& v = permutation_vector(kEmbeddedSplitSeed, 10000);
    for (std::size_t k = 0; k < 20; ++k) CHECK(d.train_indices[k] == v["first20"][k].get<std::int64_t>());
    CHECK(sha256_of_indices(d) == v["sha256"].get<std::string>());
    const auto& e = embedded_digits();
    check_rows(d, e.images, e.labels);  // disjoint and covering all 10,000
    // Every class is on both sides (the embedded order is sorted by label).
    std::array<int, 10> train{}, test{};
    for (const auto l : d.train_labels) ++train[static_cast<std::size_t>(l)];
    for (const auto l : d.test_labels) ++test[static_cast<std::size_t>(l)];
    for (int c = 0; c < 10; ++c) {
        CHECK(train[static_cast<std::size_t>(c)] > 300);
        CHECK(test[static_cast<std::size_t>(c)] > 300);
    }
    CHECK(embedded_default_task(12).train_indices != d.train_indices);
}
