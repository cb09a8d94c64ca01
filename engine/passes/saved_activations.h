// saved_activations: keep the activations that the backward reads in bf16 between the forward and
// the backward, so a training step's peak memory (reached where the forward ends, with every
// saved activation alive) holds them in half the bytes.
//
// For every value v that the forward computes and the backward reads (the inputs of every
// matmul's weight gradient, ReLU's output, GELU's pre-activation, layer norm's input, attention's
// Q, K and V, ...):
//
//   forward:   v = op(...)                     v = op(...)
//              ... forward readers of v   →    v16 = cast(v, bf16)         right after op
//                                              ... forward readers of v    (v dies after the last)
//   backward:  d = vjp_node(..., v, ...)       v32 = cast(v16, f32)        right before each reader
//                                              d = vjp_node(..., v32, ...)
//
// The backward sees those activations rounded to bf16 (8 significant bits). Statistics need one
// more step. Layer norm's mean and rstd, and the log-sum-exp of attention and cross-entropy (the
// outputs after a node's first with fewer elements than its first input) are made from v in the
// forward, and the backward reads them beside v: if they described the f32 v and the backward the
// rounded one, it would follow no function (exp(s − lse) would not sum to 1, x − mean would not
// have mean 0). So the node that makes them reads v rounded as well (a cast back to f32 right
// before it): layer norm, attention and cross-entropy compute from the bf16 activations, as they
// would in a network that keeps its activations in bf16, and the loss moves by bf16 rounding.
// Every other forward reader (the residual sums) still reads the f32 v.
// Kept in f32:
//   - parameters (the master weights), inputs and other leaves, and graph outputs (they live to
//     the end anyway);
//   - the statistics themselves;
//   - gradients a forward node made (OpDef::makes_gradients: the fused LM head and loss of
//     engine/ops/linear_cross_entropy.h returns ∂L/∂h and ∂L/∂W, which the backward reads);
//   - a value the backward reads beside a statistic made from something else (attention's output
//     O beside the log-sum-exp of its scores: the backward uses rowsum(dO ∘ O) = Σ P·dP, which
//     holds only for the exact O);
//   - values that are not f32, or under `min_elements` (their casts would cost more than they
//     save);
//   - values that do not wait: those for which the nodes run between their last forward reader and
//     their first backward reader write fewer bytes than they hold (the logits, read last by the
//     loss and first by its gradient: a bf16 copy widened back at once would only add a copy at
//     the peak).
//
// Where the graph runs after other passes recorded value numbers (the method's passes, autodiff),
// the pass edits the graph in place: the casts are appended and moved into place by
// Graph::reorder, so every value keeps its number; node indices change (the result maps them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace pillars {

struct SavedActivations {
  int stored = 0;              // activations now kept in bf16
  int widened = 0;             // casts back to f32 in front of backward nodes
  int rounded_in_forward = 0;  // casts back to f32 in front of the forward nodes that make statistics
  size_t f32_bytes = 0;        // what the stored activations take in f32 (half of it is saved)
  std::vector<int> node_map;   // old node index → new (the graph's nodes before the pass)
  int first_backward_node = 0; // where the backward starts now (its first widening cast)
};

// The backward is the nodes from `first_backward_node` on (those autodiff appended).
SavedActivations store_saved_activations_bf16(Graph& g, int first_backward_node, int64_t min_elements = 1024);

} // namespace pillars
