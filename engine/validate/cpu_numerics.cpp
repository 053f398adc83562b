#include "engine/validate/cpu_numerics.hpp"

#include <algorithm>
#include <cmath>

#include "engine/cpu/reference.hpp"
#include "engine/model/layout.hpp"
#include "engine/rng/torch_init.hpp"

namespace revgraph::validate {

template <>
Tolerance numerics_tolerance<double>() {
    return {2e-12, 2e-10};
}
template <>
Tolerance numerics_tolerance<float>() {
    return {2e-6, 3e-3};
}

nlohmann::ordered_json NumericsCheck::to_json() const {
    nlohmann::ordered_json j;
    j["dtype"] = dtype;
    j["depth"] = depth;
    j["rows"] = rows;
    j["passed"] = passed;
    j["forward_bitwise_equal"] = forward_bitwise_equal;
    j["maximum_gradient_abs_error"] = maximum_gradient_abs_error;
    j["inverse_max_abs_error"] = inverse_max_abs_error;
    j["saved_activation_storages"] = saved_activation_storages;
    j["saved_activation_bytes"] = saved_activation_bytes;
    j["storing_activation_bytes"] = storing_activation_bytes;
    j["saved_parameter_references"] = saved_parameter_references;
    return j;
}

namespace {

template <typename T>
void compare(const std::vector<T>& got, const std::vector<T>& want, std::size_t count, Tolerance tol, double& max_abs,
             double& max_excess) {
    for (std::size_t i = 0; i < count; ++i) {
        const double a = static_cast<double>(got[i]), b = static_cast<double>(want[i]);
        const double err = std::fabs(a - b);
        max_abs = std::max(max_abs, err);
        max_excess = std::max(max_excess, err - (tol.atol + tol.rtol * std::fabs(b)));
    }
}

}  // namespace

template <typename T>
NumericsCheck check_cpu_numerics(int depth, std::uint64_t seed, int rows, int width) {
    const cpu::Reference<T> ref(depth, T(0.5), width);
    const Tolerance tol = numerics_tolerance<T>();

    std::vector<float> init(ref.layout().total());
    rng::init_parameters(ref.layout(), seed, init.data());
    std::vector<T> params(init.begin(), init.end());

    // Inputs drawn after the init from a generator of their own, so they do not depend on depth.
    rng::Mt19937 data_gen(static_cast<std::uint32_t>(seed + 1));
    std::vector<T> input(static_cast<std::size_t>(rows) * width, T(0));
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < model::kPixels; ++i)
            input[r * width + i] = T(4) * static_cast<T>(rng::torch_uniform01(data_gen)) - T(0.5);
    const std::int64_t label_cycle[3] = {2, 7, 1};
    std::vector<std::int64_t> labels(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) labels[r] = label_cycle[r % 3];

    const auto rec = cpu::batch_gradients(ref, params, input, labels, cpu::BackwardMode::reconstruct);
    const auto sto = cpu::batch_gradients(ref, params, input, labels, cpu::BackwardMode::storing);

    NumericsCheck c;
    c.dtype = sizeof(T) == 8 ? "float64" : "float32";
    c.depth = depth;
    c.rows = rows;
    c.forward_bitwise_equal = rec.scores == sto.scores && rec.final_state == sto.final_state && rec.loss == sto.loss;
    // Input gradients: the 81 pixels of every row (the appended coordinates are constants).
    std::vector<T> gi_rec, gi_sto;
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < model::kPixels; ++i) {
            gi_rec.push_back(rec.input[r * width + i]);
            gi_sto.push_back(sto.input[r * width + i]);
        }
    c.maximum_gradient_excess = -INFINITY;
    compare(gi_rec, gi_sto, gi_rec.size(), tol, c.maximum_gradient_abs_error, c.maximum_gradient_excess);
    compare(rec.params, sto.params, rec.params.size(), tol, c.maximum_gradient_abs_error, c.maximum_gradient_excess);

    std::vector<T> round_trip = input;
    ref.core_forward(params.data(), round_trip.data(), rows);
    ref.core_inverse(params.data(), round_trip.data(), rows);
    double inv_excess = -INFINITY;
    compare(round_trip, input, input.size(), tol, c.inverse_max_abs_error, inv_excess);
    c.inverse_within_tolerance = inv_excess <= 0;

    if (rec.rebuilt_input.size() == input.size()) {
        double rebuilt_excess = -INFINITY;
        compare(rec.rebuilt_input, input, input.size(), tol, c.rebuilt_input_max_abs_error, rebuilt_excess);
        c.rebuilt_input_within_tolerance = rebuilt_excess <= 0;
    }

    c.saved_activation_bytes = rec.saved_bytes;
    c.storing_activation_bytes = sto.saved_bytes;
    c.saved_parameter_references = ref.layout().branch_count();
    c.passed = c.forward_bitwise_equal && c.maximum_gradient_excess <= 0 && c.inverse_within_tolerance &&
               c.rebuilt_input_within_tolerance &&
               c.saved_activation_bytes == static_cast<std::size_t>(rows) * width * sizeof(T);
    return c;
}

template NumericsCheck check_cpu_numerics<float>(int, std::uint64_t, int, int);
template NumericsCheck check_cpu_numerics<double>(int, std::uint64_t, int, int);

}  // namespace revgraph::validate
