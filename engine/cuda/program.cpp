// What is true of any program: each operation's name, kind and buffer accesses (dispatched to its
// file in engine/cuda/ops/), and the checker that holds a program to the plan's buffers.
#include "engine/cuda/program.hpp"
#include "engine/cuda/task_plan.hpp"

#include <string>

#include "engine/error.hpp"

namespace revgraph::cuda {

const char* op_name(const Op& op) {
    return std::visit([](const auto& o) { return ops::info(o).name; }, op);
}

std::vector<LaneStep> lane_schedule(const Program& p) {
    std::vector<LaneStep> out;
    std::size_t join_before = 0;
    bool forked = false;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (forked && i == join_before) out.push_back({LaneStep::Kind::join, i}), forked = false;
        const auto* g = std::get_if<GemmOp>(&p[i]);
        if (g != nullptr && g->beside > 0 && !forked) {
            out.push_back({LaneStep::Kind::beside, i});
            join_before = i + 1 + static_cast<std::size_t>(g->beside);
            forked = true;
        } else {
            out.push_back({LaneStep::Kind::chain, i});
        }
    }
    if (forked) out.push_back({LaneStep::Kind::join, p.size()});  // companions that end the program
    return out;
}

OpCounts count_ops(const Program& p) {
    OpCounts c;
    for (const auto& op : p) {
        switch (std::visit([](const auto& o) { return ops::info(o).kind; }, op)) {
            case ops::Kind::product: ++c.gemms; break;
            case ops::Kind::copy: ++c.copies; break;
            case ops::Kind::kernel: ++c.kernels; break;
        }
    }
    return c;
}

std::vector<Access> accesses(const Op& op, std::size_t gather_source_rows) {
    return std::visit([&](const auto& o) { return ops::accesses(o, gather_source_rows); }, op);
}

namespace {

bool overlap(const Access& x, const Access& y) {
    return x.ref.buf == y.ref.buf && x.ref.offset < y.ref.offset + y.extent && y.ref.offset < x.ref.offset + x.extent;
}

// A product off the chain (GemmOp::beside) and its companions: all products, neither writing what
// the other reads or writes. A product reads a and b and writes d (accesses() lists them so).
void check_beside(const Program& p, std::size_t i, const GemmOp& g) {
    const std::string where = "plan: operation " + std::to_string(i) + " (gemm, beside " + std::to_string(g.beside);
    if (g.beside < 0 || i + static_cast<std::size_t>(g.beside) >= p.size())
        throw Error(where + ") has " + std::to_string(p.size() - i - 1) + " operations after it in its program");
    const std::vector<Access> mine = ops::accesses(g, 0);
    for (std::size_t j = i + 1; j <= i + static_cast<std::size_t>(g.beside); ++j) {
        const auto* other = std::get_if<GemmOp>(&p[j]);
        const std::string with = ") runs beside operation " + std::to_string(j) + " (" + op_name(p[j]) + ")";
        if (other == nullptr) throw Error(where + with + ", which is not a product");
        if (other->beside != 0) throw Error(where + with + ", itself off the chain");
        const std::vector<Access> theirs = ops::accesses(*other, 0);
        // [0], [1]: the operands read; [2]: the output written.
        for (std::size_t m = 0; m < 3; ++m)
            for (std::size_t t = 0; t < 3; ++t)
                if ((m == 2 || t == 2) && overlap(mine[m], theirs[t]))
                    throw Error(where + with + ", and one writes what the other reads or writes (" +
                                buf_name(mine[m].ref.buf) + ")");
    }
}

// One launch runs an SgdGatherOp's two parts in no order (ops/sgd_gather.hpp): they must share no
// buffer, and the gather must be a training step's (the lifted training rows through the order,
// with labels); which step's rows (`first`) is epoch_body's to get right, and its test's to check.
void check_apart(std::size_t i, const SgdGatherOp& f, std::size_t n) {
    const std::string where = "plan: operation " + std::to_string(i) + " (sgd_gather) ";
    if (f.gather.identity || f.gather.src_rows.buf != Buf::train_rows || !f.gather.with_labels)
        throw Error(where + "gathers other than a training step's rows");
    for (const Access& s : ops::accesses(f.sgd, n))
        for (const Access& g : ops::accesses(f.gather, n))
            if (s.ref.buf == g.ref.buf) throw Error(where + "has both parts use " + buf_name(s.ref.buf));
}

}  // namespace

void TaskPlan::check(const Program& p) const {
    for (std::size_t i = 0; i < p.size(); ++i) {
        const Op& op = p[i];
        if (const auto* g = std::get_if<GemmOp>(&op)) {
            g->spec.validate();
            if (g->beside != 0) check_beside(p, i, *g);
        }
        std::size_t source_rows = 0;
        if (const auto* g = std::get_if<GatherOp>(&op))
            source_rows =
                g->src_rows.buf == Buf::train_rows ? static_cast<std::size_t>(n_) : static_cast<std::size_t>(q_);
        if (const auto* f = std::get_if<SgdGatherOp>(&op)) {
            source_rows = static_cast<std::size_t>(n_);
            check_apart(i, *f, source_rows);
        }
        if (std::holds_alternative<FusedStepOp>(op) || std::holds_alternative<FusedAnyStepOp>(op) ||
            std::holds_alternative<FusedEpochsOp>(op))
            source_rows = static_cast<std::size_t>(n_);
        for (const Access& a : accesses(op, source_rows)) {
            const std::string where = "plan: operation " + std::to_string(i) + " (" + op_name(op) + ") ";
            if (a.ref.buf == Buf::count) throw Error(where + "uses no buffer");
            if (buf_elem(a.ref.buf) != a.elem)
                throw Error(where + "reads " + buf_name(a.ref.buf) + " as the wrong type");
            if (a.ref.offset + a.extent > elements(a.ref.buf))
                throw Error(where + "reaches past the end of " + buf_name(a.ref.buf));
        }
    }
}

}  // namespace revgraph::cuda
