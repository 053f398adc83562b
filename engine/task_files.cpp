#include "engine/task_files.hpp"

#include "engine/classes.hpp"
#include "engine/error.hpp"

namespace revgraph {
namespace {

const char* const kInputNames[] = {"train_images", "train_labels", "test_images"};

InputArray described(const io::Array& a) { return InputArray{a.dtype, a.shape}; }  // C order, aligned: ours

}  // namespace

TaskInputs task_inputs_from_archive(const io::NpzArchive& archive, const std::string& source) {
    for (const auto& name : archive.names()) {
        bool known = false;
        for (const char* k : kInputNames) known = known || name == k;
        if (!known)
            throw Error(source + ": unexpected array '" + name +
                        "': an input archive holds only train_images, train_labels and test_images "
                        "(query labels must not reach the learner)");
    }
    for (const char* k : kInputNames)
        if (!archive.contains(k)) throw Error(source + ": missing array '" + std::string(k) + "'");
    const io::Array& train = archive.at("train_images");
    const io::Array& labels = archive.at("train_labels");
    const io::Array& test = archive.at("test_images");
    TaskInputs in;
    try {
        check_input_arrays(described(train), described(labels), described(test));
        in = TaskInputs{train.as<float>(), labels.as<std::int64_t>(), test.as<float>()};
        in.validate();
    } catch (const Error& e) { throw Error(source + ": " + e.what()); }
    return in;
}

TaskInputs read_task_inputs(const std::filesystem::path& path) {
    return task_inputs_from_archive(io::read_npz(path), path.string());
}

io::NpzArchive task_inputs_archive(const TaskInputs& in) {
    io::NpzArchive a;
    a.add("train_images", io::Array::from<float>({in.train_count(), 1, 9, 9}, in.train_images));
    a.add("train_labels", io::Array::from<std::int64_t>({in.train_count()}, in.train_labels));
    a.add("test_images", io::Array::from<float>({in.test_count(), 1, 9, 9}, in.test_images));
    return a;
}

std::vector<std::int64_t> read_labels(const std::filesystem::path& path, std::int64_t expected_count) {
    const io::Array a = io::read_npy(path);
    const std::string source = path.string();
    if (a.dtype != "<i8") throw Error(source + ": labels must be int64 (<i8), got " + a.dtype);
    if (a.shape.size() != 1 || a.shape[0] != expected_count)
        throw Error(source + ": expected " + std::to_string(expected_count) + " labels, got shape " +
                    io::Array::shape_string(a.shape));
    auto labels = a.as<std::int64_t>();
    check_classes(std::span<const std::int64_t>(labels), source);
    return labels;
}

io::NpzArchive state_archive(const model::Layout& layout, const TaskState& state) {
    if (state.parameters.size() != layout.total() || state.velocity.size() != layout.total())
        throw Error("state: parameter or velocity buffer has the wrong size");
    io::NpzArchive a;
    auto shape_of = [](const model::ParameterView& v) {
        return v.cols == 1 ? std::vector<std::int64_t>{std::int64_t(v.rows)}
                           : std::vector<std::int64_t>{std::int64_t(v.rows), std::int64_t(v.cols)};
    };
    for (const auto& v : layout.views())
        a.add(v.name, io::Array::from<float>(shape_of(v),
                                             std::span<const float>(state.parameters.data() + v.offset, v.size())));
    for (const auto& v : layout.views())
        a.add("velocity." + v.name,
              io::Array::from<float>(shape_of(v), std::span<const float>(state.velocity.data() + v.offset, v.size())));
    return a;
}

io::Array predictions_array(const std::vector<std::int64_t>& predictions) {
    return io::Array::from<std::int64_t>({static_cast<std::int64_t>(predictions.size())}, predictions);
}

io::Array scores_array(const std::vector<float>& scores) {
    if (scores.size() % 10 != 0) throw Error("scores: " + std::to_string(scores.size()) + " values are not (Q, 10)");
    return io::Array::from<float>({static_cast<std::int64_t>(scores.size() / 10), 10}, scores);
}

std::filesystem::path predictions_path_for(const std::filesystem::path& result_json) {
    auto p = result_json;
    return p.replace_filename(result_json.stem().string() + ".predictions.npy");
}

}  // namespace revgraph
