#pragma once
// A GPU backend's launch plan run on the CPU (`revgraph run --backend cuda-fused --emulate`): the
// very programs the GPU backend captures (engine/cuda/program.hpp), interpreted by the CUDA
// emulator (engine/cuda/emulator.hpp), with the same buffers and inputs. For cuda-fused that runs
// the fused kernels' own phase code, so it writes the outputs and hashes the device writes, on any
// machine — slowly. For cuda the products are summed in the reference's order (cuBLASLt on a
// device sums in its own, held to the GPU tolerance): the emulation shows the plan, not cuBLASLt.
#include <memory>
#include <optional>

#include "engine/backend.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/cuda/task_plan.hpp"

namespace revgraph::cpu {

class EmulatedCudaBackend final : public Backend {
public:
    // name: the GPU backend's (`cuda` or `cuda-fused`), which its results report.
    EmulatedCudaBackend(std::string name, cuda::Path path) : name_(std::move(name)), path_(path) {}
    std::string name() const override { return name_; }
    std::string device() const override;
    // The widths the GPU backend it emulates runs (cuda::path_runs_width).
    bool runs_width(int width) const override { return cuda::path_runs_width(path_, width); }
    void prepare(const PreparedInputs& prepared) override;
    void reset() override;
    void normalize() override;
    void epoch(int e) override;
    void predict() override;
    void step(int e, int b) override;
    // With clusters (--cluster-blocks), tasks of one launch shape train together as the GPU
    // backend's one launch of K clusters would: each cluster's whole task in turn, from its resident
    // permutations (cluster c runs task c alone, so in turn is the launch's bits).
    std::string launch_group() const override;
    void run_group(const std::vector<Backend*>& members) override;
    TaskState read_state() override;
    std::size_t retained_core_bytes() const override;

private:
    std::string name_;
    cuda::Path path_;
    std::optional<cuda::TaskPlan> plan_;
    std::unique_ptr<cuda::Emulator> emulator_;
    int current_epoch_ = -1;  // the epoch whose order the plan's `order` buffer holds
    cuda::Emulator& emulator();
};

}  // namespace revgraph::cpu
