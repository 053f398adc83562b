#include "engine/inputs.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/classes.hpp"
#include "engine/error.hpp"
#include "engine/io/npy.hpp"
#include "engine/model/layout.hpp"

namespace revgraph {
namespace {

// Whether every pixel is in [0, 1]; NaN fails both comparisons. Branch-free, so that it runs as
// vector code over the 1.6 M pixels of a draw; check_pixels finds and names the first bad one.
bool all_in_unit_range(std::span<const float> pixels) {
    unsigned ok = 1;
    for (const float v : pixels) ok &= static_cast<unsigned>(v >= 0.0f) & static_cast<unsigned>(v <= 1.0f);
    return ok != 0;
}

void check_pixels(std::span<const float> pixels, const char* name) {
    if (all_in_unit_range(pixels)) return;
    for (std::size_t i = 0; i < pixels.size(); ++i) {
        const float v = pixels[i];
        if (!std::isfinite(v))
            throw Error(std::string("input: ") + name + (std::isnan(v) ? " has a NaN" : " has an infinite") +
                        " pixel at flat index " + std::to_string(i));
        if (v < 0.0f || v > 1.0f) {
            // %.9g round-trips a float32: -1e-07 and 1.00000012 show why they were refused,
            // where a fixed 6 decimals would print -0.000000 and 1.000000.
            char text[32];
            std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
            throw Error(std::string("input: ") + name + " pixel " + text + " at flat index " + std::to_string(i) +
                        " is outside [0, 1]");
        }
    }
}

void check_array(const InputArray& a, const char* name, const char* dtype, const char* dtype_words) {
    // The fix is named in numpy's words, which both the Python API's and an .npz's users write: the
    // engine casts nothing itself, since a cast (float64 rounding to float32, say) is the caller's choice.
    if (a.dtype != dtype)
        throw Error(std::string("input: ") + name + " must be " + dtype_words + " (" + dtype + "), got " + a.dtype +
                    " (revgraph casts nothing; numpy: x.astype('" + dtype + "'))");
    const bool images = std::string(dtype) == "<f4";
    const bool shape_ok =
        images ? a.shape.size() == 4 && a.shape[1] == 1 && a.shape[2] == 9 && a.shape[3] == 9 : a.shape.size() == 1;
    if (!shape_ok)
        throw Error(std::string("input: ") + name + " must have shape " + (images ? "(N, 1, 9, 9)" : "(N,)") +
                    ", got " + io::Array::shape_string(a.shape));
    if (!a.c_contiguous)
        throw Error(std::string("input: ") + name + " must be C-contiguous (numpy: numpy.ascontiguousarray(x))");
    if (!a.aligned) throw Error(std::string("input: ") + name + " is not aligned to its dtype");
}

struct OwnedInputs {
    std::vector<float> train_images;
    std::vector<std::int64_t> train_labels;
    std::vector<float> test_images;
};

}  // namespace

TaskInputs::TaskInputs(std::vector<float> train_images, std::vector<std::int64_t> train_labels,
                       std::vector<float> test_images) {
    auto owned = std::make_shared<const OwnedInputs>(
        OwnedInputs{std::move(train_images), std::move(train_labels), std::move(test_images)});
    this->train_images = owned->train_images;
    this->train_labels = owned->train_labels;
    this->test_images = owned->test_images;
    owner_ = std::move(owned);
}

TaskInputs TaskInputs::borrow(std::span<const float> train_images, std::span<const std::int64_t> train_labels,
                              std::span<const float> test_images, std::shared_ptr<const void> owner) {
    TaskInputs in;
    in.train_images = train_images;
    in.train_labels = train_labels;
    in.test_images = test_images;
    in.owner_ = std::move(owner);
    return in;
}

void check_input_arrays(const InputArray& train_images, const InputArray& train_labels, const InputArray& test_images) {
    check_array(train_images, "train_images", "<f4", "float32");
    check_array(train_labels, "train_labels", "<i8", "int64");
    check_array(test_images, "test_images", "<f4", "float32");
    if (train_labels.shape[0] != train_images.shape[0])
        throw Error("input: " + std::to_string(train_images.shape[0]) + " train images but " +
                    std::to_string(train_labels.shape[0]) + " train labels");
}

void TaskInputs::validate() const {
    constexpr std::size_t px = model::kPixels;
    if (train_labels.empty()) throw Error("input: train set is empty");
    if (train_images.size() != train_labels.size() * px)
        throw Error("input: " + std::to_string(train_images.size() / px) + " train images but " +
                    std::to_string(train_labels.size()) + " train labels");
    if (test_images.empty()) throw Error("input: test set is empty");
    if (test_images.size() % px != 0) throw Error("input: test_images is not a whole number of 9x9 images");
    check_pixels(train_images, "train_images");
    check_pixels(test_images, "test_images");
    check_classes(train_labels, "input", "train label");
}

}  // namespace revgraph
