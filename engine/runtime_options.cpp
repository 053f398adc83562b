#include "engine/runtime_options.hpp"

#include <charconv>
#include <mutex>

#include "engine/error.hpp"

namespace revgraph {
namespace {

std::mutex mutex;
RuntimeOptions current;
bool is_initialized = false;

[[noreturn]] void out_of_range(const std::string& as, std::int64_t max, std::string_view got) {
    throw Error(as + " must be in 0.." + std::to_string(max) + ", got " + std::string(got));
}

// Decimal text to a number in 0..max; an integer too large for int64 is out of range, not a
// syntax error.
std::int64_t in_range(std::string_view text, const std::string& as, std::int64_t max) {
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const bool whole = !text.empty() && ptr == text.data() + text.size();
    if (!whole || (ec != std::errc() && ec != std::errc::result_out_of_range))
        throw Error(as + " needs an integer, got '" + std::string(text) + "'");
    if (ec == std::errc::result_out_of_range || v < 0 || v > max) out_of_range(as, max, text);
    return v;
}

}  // namespace

int RuntimeOptions::device_from(std::string_view text, const std::string& as) {
    return static_cast<int>(in_range(text, as, kMaxDevice));
}

std::size_t RuntimeOptions::workspace_bytes_from(std::string_view text, const std::string& as) {
    return static_cast<std::size_t>(in_range(text, as, kMaxWorkspaceBytes));
}

int RuntimeOptions::cluster_blocks_from(std::string_view text, const std::string& as) {
    return static_cast<int>(in_range(text, as, kMaxClusterBlocks));
}

void RuntimeOptions::check() const {
    if (device < 0 || device > kMaxDevice) out_of_range("runtime: device", kMaxDevice, std::to_string(device));
    if (cublaslt_workspace_bytes > static_cast<std::size_t>(kMaxWorkspaceBytes))
        out_of_range("runtime: cuBLASLt workspace bytes", kMaxWorkspaceBytes, std::to_string(cublaslt_workspace_bytes));
    if (fused_cluster_blocks < 0 || fused_cluster_blocks > kMaxClusterBlocks)
        out_of_range("runtime: cluster blocks", kMaxClusterBlocks, std::to_string(fused_cluster_blocks));
}

void Runtime::configure(const RuntimeOptions& options) {
    std::lock_guard lock(mutex);
    options.check();
    if (is_initialized && !(options == current))
        throw Error("runtime: the GPU is already initialised with device " + std::to_string(current.device) + ", a " +
                    std::to_string(current.cublaslt_workspace_bytes) + "-byte cuBLASLt workspace and " +
                    (current.programmatic_launch ? "programmatic launch on" : "programmatic launch off") +
                    (current.fused_cluster_blocks == 0
                         ? std::string()
                         : ", epochs on clusters of " + std::to_string(current.fused_cluster_blocks) + " blocks") +
                    "; set them before the first GPU task");
    current = options;
}

RuntimeOptions Runtime::options() {
    std::lock_guard lock(mutex);
    return current;
}

RuntimeOptions Runtime::initialize(const std::function<void(const RuntimeOptions&)>& open) {
    std::lock_guard lock(mutex);
    open(current);
    is_initialized = true;
    return current;
}

bool Runtime::initialized() {
    std::lock_guard lock(mutex);
    return is_initialized;
}

void Runtime::reset_for_tests() {
    std::lock_guard lock(mutex);
    is_initialized = false;
    current = RuntimeOptions{};
}

}  // namespace revgraph
