#include "engine/runtime_options.hpp"

#include <mutex>

#include "engine/error.hpp"

namespace revgraph {
namespace {

std::mutex mutex;
RuntimeOptions current;
bool is_initialized = false;

void check(const RuntimeOptions& o) {
    if (o.device < 0) throw Error("runtime: device must be >= 0, got " + std::to_string(o.device));
    if (o.cublaslt_workspace_bytes > (std::size_t(1) << 32))
        throw Error("runtime: cuBLASLt workspace above 4 GiB is not accepted");
}

}  // namespace

void Runtime::configure(const RuntimeOptions& options) {
    std::lock_guard lock(mutex);
    check(options);
    if (is_initialized && !(options == current))
        throw Error("runtime: the GPU is already initialised with device " + std::to_string(current.device) + ", a " +
                    std::to_string(current.cublaslt_workspace_bytes) + "-byte cuBLASLt workspace and " +
                    (current.programmatic_launch ? "programmatic launch on" : "programmatic launch off") +
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
