// The plan's operations one at a time through the CPU emulator (engine/cuda/emulator.hpp), each
// against its float64 math (test/cuda/op_cases.hpp): one line per operation and shape, exit 1 on
// any FAIL. Runs in every build.
#include <cstdio>
#include <memory>

#include "engine/cuda/emulator.hpp"
#include "test/cuda/op_cases.hpp"

using namespace revgraph::cuda;

namespace {

class EmulatorRunner final : public op_cases::Runner {
public:
    explicit EmulatorRunner(const TaskPlan& plan) : emulator_(plan) {}
    const char* name() const override { return "emulator"; }
    void load(const op_cases::Buffers& b) override {
        for (int k = 0; k < kBufCount; ++k) {
            const Buf buf = static_cast<Buf>(k);
            emulator_.f32(buf) = b.f32[k];
            emulator_.i32(buf) = b.i32[k];
            emulator_.i64(buf) = b.i64[k];
        }
    }
    void run(const Program& ops) override { emulator_.execute(ops); }
    op_cases::Buffers read() override {
        op_cases::Buffers b;
        for (int k = 0; k < kBufCount; ++k) {
            const Buf buf = static_cast<Buf>(k);
            b.f32[k] = emulator_.f32(buf);
            b.i32[k] = emulator_.i32(buf);
            b.i64[k] = emulator_.i64(buf);
        }
        return b;
    }

private:
    Emulator emulator_;
};

}  // namespace

int main() {
    const int failures = op_cases::run_all(
        "emulator", [](const TaskPlan& plan) { return std::make_unique<EmulatorRunner>(plan); }, 8);
    if (failures > 0) std::printf("%d FAIL\n", failures);
    return failures > 0 ? 1 : 0;
}
