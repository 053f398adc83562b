#include "engine/cpu/reference_backend.hpp"

#include "engine/cpu/cpu_name.hpp"
#include "engine/error.hpp"

namespace revgraph::cpu {

std::string ReferenceBackend::device() const { return cpu_name(); }

void ReferenceBackend::prepare(const PreparedInputs& prepared) {
    trainer_ = std::make_unique<Trainer<float>>(prepared);
}

Trainer<float>& ReferenceBackend::trainer() {
    if (!trainer_) throw Error("cpu-reference: used before prepare()");
    return *trainer_;
}

TaskState ReferenceBackend::read_state() {
    const auto& t = trainer();
    return TaskState{t.parameters(), t.velocity(), t.gradients(), t.scores(), t.predictions()};
}

std::size_t ReferenceBackend::retained_core_bytes() const { return trainer_ ? trainer_->retained_core_bytes() : 0; }

}  // namespace revgraph::cpu
