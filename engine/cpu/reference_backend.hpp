#pragma once
// The reference engine (float32) behind the Backend interface: `--backend cpu-reference`.
#include <memory>

#include "engine/backend.hpp"
#include "engine/cpu/trainer.hpp"

namespace revgraph::cpu {

class ReferenceBackend final : public Backend {
public:
    std::string name() const override { return "cpu-reference"; }
    std::string device() const override;
    bool runs_width(int) const override { return true; }  // any width TaskConfig allows
    void prepare(const PreparedInputs& prepared) override;
    void reset() override { trainer().reset(); }
    void normalize() override { trainer().normalize(); }
    void epoch(int e) override { trainer().epoch(e); }
    void predict() override { trainer().predict(); }
    void step(int e, int b) override { trainer().step(e, b); }
    TaskState read_state() override;
    std::size_t retained_core_bytes() const override;

private:
    std::unique_ptr<Trainer<float>> trainer_;
    Trainer<float>& trainer();
};

}  // namespace revgraph::cpu
