#pragma once
// Process-wide GPU settings that must be fixed before the GPU is initialised (docs/spec.md §8's "late
// initialisation rejected"): which device, and the size of each cuBLASLt workspace (`cuda` keeps
// two: the chain's and the second stream's, GemmOp::beside, so it costs twice this in device memory). Host-only logic,
// so its rules are tested on machines without a GPU.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace revgraph {

struct RuntimeOptions {
    int device = 0;
    std::size_t cublaslt_workspace_bytes = std::size_t(32) << 20;
    // cuda-fused: launch each kernel with Programmatic Dependent Launch (Hopper and later; a no-op
    // elsewhere). A kernel lets the next one be scheduled before its last phases, and waits for the
    // previous one's completion before it reads anything that one writes (the rows kernel first
    // issues the copies of its rows, which no kernel writes): the bytes are the same. On by default
    // because it makes a task faster than plain launches, timed by one harness in one call
    // (bench/NOTES.md, "Levers tried, and what each gave"); --no-pdl turns it off.
    bool programmatic_launch = true;
    // cuda-fused at width 82: 0 runs a step as two kernels (the default); 1..16 runs each epoch's
    // steps in ONE launch of a thread-block cluster of that many blocks (sm_90+;
    // engine/cuda/fused_cluster.hpp), built to give the same bytes. Off by default until a GPU report
    // times it against the two-kernel step (bench/NOTES.md); --cluster-blocks N sets it.
    int fused_cluster_blocks = 0;
    bool operator==(const RuntimeOptions&) const = default;

    // The ranges, written once: the command's --device and --workspace-bytes and Python's
    // configure_gpu all set the options through the two functions below.
    static constexpr std::int64_t kMaxDevice = 1023;
    static constexpr std::int64_t kMaxWorkspaceBytes = std::int64_t(1) << 32;
    static constexpr std::int64_t kMaxClusterBlocks = 16;  // sm_90's largest cluster (fused::kMaxClusterBlocks)
    // A user's number, as decimal text (the command's argument, str() of a Python int: any size),
    // into an option. Throws Error "<as> needs an integer, got 'x'" or "<as> must be in 0..1023,
    // got 5000", `as` naming the option the way the caller spells it ("option --device", "device").
    static int device_from(std::string_view text, const std::string& as);
    static std::size_t workspace_bytes_from(std::string_view text, const std::string& as);
    static int cluster_blocks_from(std::string_view text, const std::string& as);
    // The same ranges on the options as they are (Runtime::configure's check): throws Error.
    void check() const;
};

class Runtime {
public:
    // Set the options. Allowed any number of times before initialisation; afterwards only the
    // options already in force are accepted, anything else throws revgraph::Error.
    static void configure(const RuntimeOptions& options);
    static RuntimeOptions options();  // a copy: configure() may run on another thread
    // The CUDA backend's touch of the device: calls open(options in force) (which selects the
    // device), then fixes the options, all under the lock configure() takes, so a configure() on
    // another thread is either before (and used) or after (and checked). If open throws, nothing
    // is fixed: a bad device leaves the process free to configure again. Returns the options used.
    static RuntimeOptions initialize(const std::function<void(const RuntimeOptions&)>& open);
    static bool initialized();
    // For tests of the rules above only.
    static void reset_for_tests();
};

}  // namespace revgraph
