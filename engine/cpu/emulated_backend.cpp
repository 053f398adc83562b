#include "engine/cpu/emulated_backend.hpp"

#include "engine/cpu/cpu_name.hpp"
#include "engine/cuda/cluster_tasks.hpp"
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

std::string EmulatedCudaBackend::launch_group() const {
    if (!plan_ || plan_->cluster_blocks() == 0) return {};
    const int epochs = plan_->config().epochs;
    return name_ +
           " (emulated): " + cuda::launch_group_key(emulator_->fused_epochs_args(0, epochs), plan_->cluster_blocks());
}

void EmulatedCudaBackend::run_group(const std::vector<Backend*>& members) {
    const std::vector<EmulatedCudaBackend*> group = cuda::launch_group_members(*this, members);
    for (EmulatedCudaBackend* m : group) {
        m->reset();
        m->normalize();
    }
    for (EmulatedCudaBackend* m : group) {
        m->emulator().fused_epochs(0, m->plan_->config().epochs, m->plan_->cluster_blocks());
        m->current_epoch_ = -1;  // the order buffer holds no epoch's order now
    }
    for (EmulatedCudaBackend* m : group) m->predict();
}

TaskState EmulatedCudaBackend::read_state() {
    cuda::Emulator& emu = emulator();
    return TaskState{emu.f32(cuda::Buf::params), emu.f32(cuda::Buf::velocity), emu.f32(cuda::Buf::grads),
                     emu.f32(cuda::Buf::query_scores), emu.i64(cuda::Buf::predictions)};
}

std::size_t EmulatedCudaBackend::retained_core_bytes() const { return plan_ ? plan_->retained_core_bytes() : 0; }

}  // namespace revgraph::cpu
