#include "engine/qualify/band.hpp"

#include "engine/error.hpp"

namespace revgraph::qualify {

namespace {

__extension__ typedef __int128 Wide;  // GCC and clang; exact products of two int64

constexpr std::int64_t kScale = 1000000000;  // 10^9: nine decimals after the point
constexpr std::int64_t kHundred = 100 * kScale;

// ceil(total × (100 − percent) / 100) with percent in units of 10^-9; __int128 so that any int64
// total is exact (total × 10^11 overflows int64 from ~9.2e7 on).
std::int64_t ceil_share(std::int64_t total, std::int64_t nano_percent) {
    if (total < 0) throw Error("band: a negative count (" + std::to_string(total) + ")");
    if (nano_percent >= kHundred) return 0;
    const Wide keep = static_cast<Wide>(kHundred - nano_percent);
    const Wide num = static_cast<Wide>(total) * keep;
    return static_cast<std::int64_t>((num + kHundred - 1) / kHundred);
}

}  // namespace

Band Band::parse(const std::string& text, const std::string& what) {
    const auto bad = [&] {
        return Error(what + " must be a decimal number of percent in 0..100 (\"12\", \"7.5\"), got '" + text + "'");
    };
    std::size_t i = 0;
    std::int64_t whole = 0, fraction = 0;
    int whole_digits = 0, fraction_digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++whole_digits) {
        if (whole_digits >= 3) throw bad();  // above 100 (or leading zeros past sense) anyway
        whole = whole * 10 + (text[i] - '0');
    }
    if (i < text.size() && text[i] == '.') {
        ++i;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++fraction_digits) {
            if (fraction_digits >= 9) throw bad();
            fraction = fraction * 10 + (text[i] - '0');
        }
        if (fraction_digits == 0) throw bad();  // "12." says less than it seems to
    }
    if (i != text.size() || whole_digits == 0) throw bad();
    for (int d = fraction_digits; d < 9; ++d) fraction *= 10;
    const std::int64_t nano = whole * kScale + fraction;
    if (nano > kHundred) throw bad();
    Band b;
    b.text_ = text;
    b.nano_ = nano;
    return b;
}

std::int64_t Band::required_correct(std::int64_t total) const { return ceil_share(total, nano_); }

std::int64_t Band::per_draw_floor(std::int64_t per_draw) const {
    return ceil_share(per_draw, nano_ + 15 * kScale / 10);  // 1.5 points below the band
}

}  // namespace revgraph::qualify
