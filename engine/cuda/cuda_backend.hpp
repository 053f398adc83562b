#pragma once
// `--backend cuda`: the reversible MLP on one GPU through cuBLASLt and CUDA graphs (reported as "cuda");
// `--backend cuda-fused`: the same graphs with each SGD step two fused kernels (engine/cuda/fused.hpp).
// prepare() does everything that allocates or may fail: device state (parameters, gradients,
// momentum, raw pixels, labels, every epoch's permutation; on the cuBLASLt path only, the cuBLASLt
// handle and two workspaces, the chain's and the second stream's), algorithm choice, and the capture of the task's
// graphs. run() only launches graphs and records two events. No CUDA headers here, so host code of any build may
// include it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.hpp"
#include "engine/cuda/task_plan.hpp"

namespace revgraph::cuda {

class CudaBackend final : public Backend {
public:
    // fused: two kernels per step (cuda-fused); otherwise cuBLASLt products and small kernels.
    explicit CudaBackend(bool fused = false);
    ~CudaBackend() override;

    std::string name() const override { return fused_ ? "cuda-fused" : "cuda"; }
    std::string device() const override;
    bool asynchronous() const override { return true; }
    // Both paths: every width TaskConfig allows (cuda::path_runs_width, the one place that says).
    bool runs_width(int width) const override { return path_runs_width(fused_ ? Path::fused : Path::cublaslt, width); }

    void prepare(const PreparedInputs& prepared) override;
    // Graph launches between two events; no host sync. after_epoch(e) runs once epoch e is enqueued.
    void run(int epochs, const EpochHook& after_epoch = nullptr) override;
    void reset() override;             // the reset graph
    void normalize() override;         // the normalize graph
    void epoch(int e) override;        // epoch e's graph
    void predict() override;           // the predict graph
    void step(int e, int b) override;  // eager: permutation e -> order, then step b's launches
    void synchronize() override;
    // With clusters: tasks on one GPU of one launch shape train as K clusters of ONE launch
    // (engine/cuda/cluster_tasks.hpp); each member's reset, normalise and predict graphs on its own
    // stream around it, its events around all of it (so its time is the group's, start to its
    // predictions).
    std::string launch_group() const override;
    void run_group(const std::vector<Backend*>& members) override;

    TaskState read_state() override;
    std::size_t retained_core_bytes() const override;
    std::optional<double> last_run_device_seconds() const override;

    // For reports and validation: pinned matmul algorithms, launches per step, graph node counts.
    nlohmann::ordered_json diagnostics() const;

private:
    struct Impl;
    bool fused_;
    std::unique_ptr<Impl> impl_;
    Impl& impl() const;
};

}  // namespace revgraph::cuda
