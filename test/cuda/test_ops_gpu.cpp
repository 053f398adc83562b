// The plan's operations one at a time on the GPU (engine/cuda/executor.hpp: the very launches the
// backend compiles), each against its float64 math (test/cuda/op_cases.hpp): one line per operation
// and shape, exit 1 on any FAIL; exits 77 (SKIP) without a CUDA device. Products go through
// cuBLASLt, which sums in an order of its own: the same tolerances hold (they bound float32 sums).
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>

#include "engine/cuda/device.hpp"
#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/executor.hpp"
#include "engine/cuda_util/check.hpp"
#include "engine/runtime_options.hpp"
#include "test/cuda/op_cases.hpp"

using namespace revgraph;
using namespace revgraph::cuda;

namespace {

class GpuRunner final : public op_cases::Runner {
public:
    explicit GpuRunner(const TaskPlan& plan) : plan_(plan), memory_(plan) {
        cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        if (path_uses_cublaslt(plan.path())) {
            workspace_ = std::make_unique<DeviceBuffer>(RuntimeOptions{}.cublaslt_workspace_bytes);
            matmuls_ = std::make_unique<LtMatmuls>(workspace_->get(), workspace_->bytes());
        }
    }
    ~GpuRunner() override {
        (void)cudaStreamSynchronize(stream_);
        (void)cudaStreamDestroy(stream_);
    }
    const char* name() const override { return "gpu"; }
    void load(const op_cases::Buffers& b) override {
        for (int k = 0; k < kBufCount; ++k) {
            const Buf buf = static_cast<Buf>(k);
            if (plan_.bytes(buf) > 0) memory_.upload(buf, data(b, k), plan_.bytes(buf));
        }
        cudaCheck(cudaDeviceSynchronize());
    }
    void run(const Program& ops) override {
        const CompiledProgram compiled = compile(plan_, ops, memory_, matmuls_.get());
        compiled.launch(stream_);
        cudaCheck(cudaStreamSynchronize(stream_));
    }
    op_cases::Buffers read() override {
        op_cases::Buffers b;
        for (int k = 0; k < kBufCount; ++k) {
            const Buf buf = static_cast<Buf>(k);
            const std::size_t n = plan_.elements(buf);
            switch (buf_elem(buf)) {
                case Elem::f32: b.f32[k].resize(n); break;
                case Elem::i32: b.i32[k].resize(n); break;
                case Elem::i64: b.i64[k].resize(n); break;
            }
            if (n > 0) memory_.download(buf, const_cast<void*>(data(b, k)), plan_.bytes(buf));
        }
        return b;
    }

private:
    const TaskPlan& plan_;
    DeviceMemory memory_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<DeviceBuffer> workspace_;
    std::unique_ptr<LtMatmuls> matmuls_;

    static const void* data(const op_cases::Buffers& b, int k) {
        switch (buf_elem(static_cast<Buf>(k))) {
            case Elem::i32: return b.i32[k].data();
            case Elem::i64: return b.i64[k].data();
            case Elem::f32: break;
        }
        return b.f32[k].data();
    }
};

}  // namespace

int main() {
    if (device_count() == 0) {
        std::printf("SKIP: per-op GPU tests need a CUDA device: %s\n", describe_device().c_str());
        return 77;
    }
    try {
        const int failures = op_cases::run_all(
            "gpu", [](const TaskPlan& plan) { return std::make_unique<GpuRunner>(plan); }, 8);
        if (failures > 0) std::printf("%d FAIL\n", failures);
        return failures > 0 ? 1 : 0;
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
}
