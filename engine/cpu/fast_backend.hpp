#pragma once
// The fast CPU backend, `--backend cpu`: the reference's math (docs/spec.md §3-§5, reconstructing
// backward with one B x width state kept) on feature-major batches with explicit SIMD kernels
// (fast_kernels.hpp). Single-threaded and deterministic: the same bits on every run, and the same
// on AVX-512, AVX2 and ARM (portable+fma) machines. Checked against the reference step by step
// within tolerance, not bitwise (sums are reordered and fused).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/cpu/fast_kernels.hpp"

namespace revgraph::cpu {

// A 64-byte aligned array of trivially copyable values, sized once.
template <typename T>
class AlignedArray {
public:
    AlignedArray() = default;
    void resize(std::size_t n);
    T* data() { return data_.get(); }
    const T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const;
    };
    std::unique_ptr<T, Free> data_;
    std::size_t size_ = 0;
};

class FastBackend final : public Backend {
public:
    explicit FastBackend(fast::Isa isa = fast::best_isa());

    std::string name() const override { return "cpu"; }
    std::string device() const override;
    fast::Isa isa() const { return isa_; }
    bool runs_width(int) const override { return true; }  // any width TaskConfig allows

    void prepare(const PreparedInputs& prepared) override;
    void reset() override;
    void normalize() override;
    void epoch(int e) override;
    void predict() override;
    void step(int e, int b) override;
    TaskState read_state() override;
    std::size_t retained_core_bytes() const override { return state_.size() * sizeof(float); }

    int batches_per_epoch() const;
    int batch_rows(int b) const;

private:
    fast::Isa isa_;
    const fast::Ops* ops_;
    bool prepared_ = false;
    int batch_size_ = 0;
    std::vector<float> initial_;
    rng::EpochOrders permutations_;  // drawn as each epoch needs its order
    fast::Workspace ws_;
    AlignedArray<float> params_, grads_, velocity_, train_rows_;
    AlignedArray<float> state_, dstate_, relu_l_, relu_r_, scores_, dscores_, labels_;
    AlignedArray<float> pstate_, prelu_l_, prelu_r_, pscores_, out_scores_;
    AlignedArray<std::int64_t> predictions_;

    void require_prepared() const;
    const std::int64_t* epoch_order(int e);  // epoch e's order, its length checked
};

}  // namespace revgraph::cpu
