#pragma once
// The error band of a qualification in exact integers (docs/spec.md §9): a band given as a decimal
// string ("12", "7.5") needs required = ceil(total × (100 − band) / 100) correct predictions, and
// every draw at least the same rule 1.5 points below the band. No float ever decides a verdict:
// qualify, verify and `python -m revgraph score` all call this one rule.
#include <cstdint>
#include <string>

namespace revgraph::qualify {

class Band {
public:
    // A decimal number of percent in 0..100: digits, optionally '.' and at most 9 more digits
    // ("12", "7.5", "0.125"); no sign, exponent or spaces. Throws Error "<what> must be ...".
    static Band parse(const std::string& text, const std::string& what = "band");

    const std::string& text() const { return text_; }                    // as given, e.g. "7.5"
    double percent() const { return static_cast<double>(nano_) / 1e9; }  // for reports only
    std::int64_t nano_percent() const { return nano_; }                  // the band in units of 1e-9 %

    // ceil(total × (100 − band) / 100); 0 for total 0. Throws Error when total < 0.
    std::int64_t required_correct(std::int64_t total) const;
    // ceil(per_draw × (100 − band − 1.5) / 100), 0 when the band is 98.5 or more.
    std::int64_t per_draw_floor(std::int64_t per_draw) const;

private:
    std::string text_;
    std::int64_t nano_ = 0;  // band × 10^9, exact
};

}  // namespace revgraph::qualify
