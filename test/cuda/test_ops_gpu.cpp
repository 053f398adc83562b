// The plan's operations one at a time on the GPU (engine/cuda/executor.hpp: the very launches the
// backend compiles), each against its float64 math (test/cuda/op_cases.hpp): one line per operation
// and shape, exit 1 on any FAIL; exits 77 (SKIP) without a CUDA device. Products go through
// cuBLASLt, which sums in an order of its own: the same tolerances hold (they bound float32 sums).
// Then again with every product on the hand-written kernel (LtMatmuls' way on where cuBLASLt pins
// nothing), and each of the model's six products through that kernel against host_gemm, the
// emulator's sum, bit for bit.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/executor.hpp"
#include "engine/cuda/lt_matmul.hpp"
#include "engine/cuda/ops/gemm.hpp"
#include "engine/cuda_util/check.hpp"
#include "engine/cuda_util/handles.hpp"
#include "engine/runtime_options.hpp"
#include "test/cuda/op_cases.hpp"

using namespace revgraph;
using namespace revgraph::cuda;

namespace {

class GpuRunner final : public op_cases::Runner {
public:
    GpuRunner(const TaskPlan& plan, bool hand_kernel) : plan_(plan), memory_(plan) {
        if (path_uses_cublaslt(plan.path())) {
            workspace_ = std::make_unique<DeviceBuffer>(RuntimeOptions{}.cublaslt_workspace_bytes);
            matmuls_ = std::make_unique<LtMatmuls>(workspace_->get(), workspace_->bytes(), hand_kernel);
        }
    }
    const char* name() const override { return "gpu"; }
    void load(const op_cases::Buffers& b) override {
        for (int k = 0; k < kBufCount; ++k) {
            const Buf buf = static_cast<Buf>(k);
            if (plan_.bytes(buf) > 0) memory_.upload_async(buf, data(b, k), plan_.bytes(buf), stream_.s);
        }
        cudaCheck(cudaStreamSynchronize(stream_.s));
    }
    void run(const Program& ops) override {
        const CompiledProgram compiled = compile(plan_, ops, memory_, matmuls_.get());
        compiled.launch(stream_.s);
        cudaCheck(cudaStreamSynchronize(stream_.s));
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
    std::unique_ptr<DeviceBuffer> workspace_;
    std::unique_ptr<LtMatmuls> matmuls_;
    Stream stream_;  // declared last: synchronised and destroyed first

    static const void* data(const op_cases::Buffers& b, int k) {
        switch (buf_elem(static_cast<Buf>(k))) {
            case Elem::i32: return b.i32[k].data();
            case Elem::i64: return b.i64[k].data();
            case Elem::f32: break;
        }
        return b.f32[k].data();
    }
};

// Each of the model's products (at a full and an odd row count) through the hand-written kernel,
// against host_gemm's bits: returns the failures, one line each.
int hand_kernel_bits() {
    std::mt19937 rng(781);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    int failures = 0;
    for (const int rows : {128, 37}) {
        const GemmSpec specs[] = {couple_gemm(rows),           branch_grads_gemm(rows, 0.5f, 4, 41 * 128),
                                  input_grad_gemm(rows, 0.5f), head_forward_gemm(rows),
                                  head_weight_grad_gemm(rows), head_input_grad_gemm(rows)};
        for (const GemmSpec& spec : specs) {
            const std::size_t na = spec.a_extent() + (spec.batch - 1) * spec.stride_a,
                              nb = spec.b_extent() + (spec.batch - 1) * spec.stride_b,
                              nd = spec.d_extent() + (spec.batch - 1) * spec.stride_d;
            std::vector<float> a(na), b(nb), want(nd, -7.0f), got(nd);
            for (float& x : a) x = u(rng);
            for (float& x : b) x = u(rng);
            host_gemm(spec, a.data(), b.data(), want.data());
            DeviceBuffer da(na * 4), db(nb * 4), dd(nd * 4), ws(1 << 20);
            cudaCheck(cudaMemcpy(da.get(), a.data(), na * 4, cudaMemcpyHostToDevice));
            cudaCheck(cudaMemcpy(db.get(), b.data(), nb * 4, cudaMemcpyHostToDevice));
            // Untouched elements between strided outputs must stay as they were: poison them alike.
            std::vector<float> poison(nd, -7.0f);
            cudaCheck(cudaMemcpy(dd.get(), poison.data(), nd * 4, cudaMemcpyHostToDevice));
            LtMatmuls lt(ws.get(), ws.bytes(), true);
            const int id = lt.bind(spec, da.as<float>(), db.as<float>(), dd.as<float>());
            lt.launch(id, nullptr);
            cudaCheck(cudaDeviceSynchronize());
            cudaCheck(cudaMemcpy(got.data(), dd.get(), nd * 4, cudaMemcpyDeviceToHost));
            const bool same = std::memcmp(got.data(), want.data(), nd * 4) == 0;
            std::printf("%s gemm %s batch %d on the hand-written kernel: %s host_gemm's bits (%zu lines)\n",
                        same ? "OK  " : "FAIL", spec.describe().c_str(), spec.batch, same ? "equal to" : "NOT",
                        lt.hand_kernel_products().size());
            failures += same && lt.hand_kernel_products().size() == 1 ? 0 : 1;
        }
    }
    return failures;
}

}  // namespace

int main() {
    if (device_count() == 0) {
        std::printf("SKIP: per-op GPU tests need a CUDA device: %s\n", describe_device().c_str());
        return 77;
    }
    try {
        int failures = op_cases::run_all(
            "gpu", [](const TaskPlan& plan) { return std::make_unique<GpuRunner>(plan, false); }, 8);
        failures += op_cases::run_all(
            "gpu, products on the hand-written kernel",
            [](const TaskPlan& plan) { return std::make_unique<GpuRunner>(plan, true); }, 4);
        failures += hand_kernel_bits();
        if (failures > 0) std::printf("%d FAIL\n", failures);
        return failures > 0 ? 1 : 0;
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
}
