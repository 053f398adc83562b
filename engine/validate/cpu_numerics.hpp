#pragma once
// docs/spec.md §8's CPU numerical validation: the reconstructing backward against the storing one on
// identical weights, plus the inverse, for one dtype and depth. `revgraph validate` reports these
// and the tests assert them.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/layout.hpp"

namespace revgraph::validate {

struct Tolerance {
    double atol, rtol;
};
// The published tolerances: float64 atol 2e-12 / rtol 2e-10, float32 atol 2e-6 / rtol 3e-3.
template <typename T>
Tolerance numerics_tolerance();

struct NumericsCheck {
    std::string dtype;  // "float32" / "float64"
    int depth = 0;
    int rows = 0;
    bool forward_bitwise_equal = false;
    double maximum_gradient_abs_error = 0;  // reconstruct vs storing, inputs and every parameter
    double maximum_gradient_excess = 0;     // max(|a-b| - (atol + rtol|b|)); <= 0 passes
    double inverse_max_abs_error = 0;       // |inverse(core(x)) - x|
    bool inverse_within_tolerance = false;
    // The reconstructing backward's one buffer after it ran, against the core input: it walked the
    // final state back to x (a backward that kept or re-ran the forward instead leaves it the final
    // state, and fails here). Not in the published report's keys.
    double rebuilt_input_max_abs_error = 0;
    bool rebuilt_input_within_tolerance = false;
    std::size_t saved_activation_bytes = 0;  // counted from the buffer the backward was handed
    std::size_t storing_activation_bytes = 0;
    int saved_activation_storages = 1;
    int saved_parameter_references = 0;
    bool passed = false;
    nlohmann::ordered_json to_json() const;
};

// Depth `depth`, initial parameters of `seed` (torch init), `rows` examples of 4u-0.5 with the
// coordinates past the 81 pixels 0 (u from the same seed's stream after init), labels 2,7,1,… ;
// `width` lifted coordinates (82, rev88's, in the validation report; others in the tests).
template <typename T>
NumericsCheck check_cpu_numerics(int depth, std::uint64_t seed = 199, int rows = 3, int width = model::kFeatures);

}  // namespace revgraph::validate
