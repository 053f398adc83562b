#pragma once
// The arithmetic one task needs (docs/spec.md §3-§5), counted once for the benchmarks' FLOP rates:
// 2 FLOPs a multiply-add, the products of the model only (lift, softmax, relu and SGD are a few
// operations per value and left out). With h = width/2, D = depth, W = width:
//   forward, per example:             2D·h² (branches) + 10W (head)
//   backward, per training example:   20W (head weight and state gradients)
//                                     + 6D·h² - 2h² (each branch: rebuild, dW, dx; block 0's left
//                                       rebuild and dR feed nothing training reads)
// so a task costs 2·[N·E·(8D·h² − 2h² + 30W) + Q·(2D·h² + 10W)]: quadratic in the width, linear in
// the depth. rev88 (W 82, D 2, N = Q = 10,000, E = 2): 1.19 GFLOP.
#include <cstdint>

namespace revgraph::model {

inline double task_flops(int depth, int width, std::int64_t train, std::int64_t query, int epochs) {
    const double h2 = static_cast<double>(width / 2) * (width / 2), w = width, d = depth;
    const double train_macs = 8 * d * h2 - 2 * h2 + 30 * w;
    const double query_macs = 2 * d * h2 + 10 * w;
    return 2 * (static_cast<double>(train) * epochs * train_macs + static_cast<double>(query) * query_macs);
}

}  // namespace revgraph::model
