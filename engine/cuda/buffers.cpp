#include "engine/cuda/buffers.hpp"

namespace revgraph::cuda {

const char* buf_name(Buf b) {
    switch (b) {
        case Buf::params: return "params";
        case Buf::grads: return "grads";
        case Buf::velocity: return "velocity";
        case Buf::initial: return "initial";
        case Buf::train_raw: return "train_raw";
        case Buf::query_raw: return "query_raw";
        case Buf::train_rows: return "train_rows";
        case Buf::query_rows: return "query_rows";
        case Buf::train_labels: return "train_labels";
        case Buf::permutations: return "permutations";
        case Buf::order: return "order";
        case Buf::state: return "state";
        case Buf::dstate: return "dstate";
        case Buf::act_left: return "act_left";
        case Buf::act_right: return "act_right";
        case Buf::branch: return "branch";
        case Buf::dtmp: return "dtmp";
        case Buf::scores: return "scores";
        case Buf::dscores: return "dscores";
        case Buf::batch_labels: return "batch_labels";
        case Buf::act_stack: return "act_stack";
        case Buf::grad_stack: return "grad_stack";
        case Buf::query_state: return "query_state";
        case Buf::query_act_left: return "query_act_left";
        case Buf::query_act_right: return "query_act_right";
        case Buf::query_branch: return "query_branch";
        case Buf::query_scores: return "query_scores";
        case Buf::predictions: return "predictions";
        case Buf::count: break;
    }
    return "?";
}

bool buf_is_input(Buf b) {
    return b == Buf::initial || b == Buf::train_raw || b == Buf::query_raw || b == Buf::train_labels ||
           b == Buf::permutations;
}

Elem buf_elem(Buf b) {
    switch (b) {
        case Buf::train_labels:
        case Buf::permutations:
        case Buf::order:
        case Buf::batch_labels: return Elem::i32;
        case Buf::predictions: return Elem::i64;
        default: return Elem::f32;
    }
}

std::size_t elem_bytes(Elem e) { return e == Elem::i64 ? 8 : 4; }

}  // namespace revgraph::cuda
