#include "engine/cpu/emulated_backend.hpp"

#include "engine/cpu/cpu_name.hpp"
#include "engine/error.hpp"
#include "engine/runtime_options.hpp"

namespace revgraph::cpu {

std::string EmulatedCudaBackend::device() const {
    return "CPU emulation of " + name_ + "'s launch plan (" + cpu_name() + ")";
}

void EmulatedCudaBackend::prepare(const PreparedInputs& prepared) {
    // As the GPU backend: epochs on a cluster where the runtime asks (--cluster-blocks); the plan
    // refuses it, in one line, on a path or width that has none.
    plan_.emplace(prepared.config, prepared.inputs->train_count(), prepared.inputs->test_count(), path_,
                  Runtime::options().fused_cluster_blocks);
    emulator_ = std::make_unique<cuda::Emulator>(*plan_);
    emulator_->upload(prepared);
    current_epoch_ = -1;
}

cuda::Emulator& EmulatedCudaBackend::emulator() {
    if (!emulator_) throw Error(name_ + " (emulated): used before prepare()");
    return *emulator_;
}

void EmulatedCudaBackend::reset() { emulator().execute(plan_->reset()); }
void EmulatedCudaBackend::normalize() { emulator().execute(plan_->normalize()); }
void EmulatedCudaBackend::predict() { emulator().execute(plan_->predict()); }

void EmulatedCudaBackend::epoch(int e) {
    emulator().execute(plan_->epoch(e));
    current_epoch_ = e;
}

void EmulatedCudaBackend::step(int e, int b) {
    if (current_epoch_ != e) {
        emulator().execute(plan_->epoch_start(e));
        current_epoch_ = e;
    }
    emulator().execute(plan_->step(b));
}

TaskState EmulatedCudaBackend::read_state() {
    cuda::Emulator& emu = emulator();
    return TaskState{emu.f32(cuda::Buf::params), emu.f32(cuda::Buf::velocity), emu.f32(cuda::Buf::grads),
                     emu.f32(cuda::Buf::query_scores), emu.i64(cuda::Buf::predictions)};
}

std::size_t EmulatedCudaBackend::retained_core_bytes() const { return plan_ ? plan_->retained_core_bytes() : 0; }

}  // namespace revgraph::cpu
