// saved_activations: keep the activations that the backward reads in bf16 between the forward and
// the backward, so a training step's peak memory (reached where the forward ends, with every
// saved activation alive) holds them in half the bytes.
//
// For every value v that the forward computes and a backward node reads (layer norm's input, the
// inputs of every matmul, attention's Q, K, V and O, ReLU's output, ...):
//
//   forward:   v = op(...)                     v = op(...)
//              ... forward readers of v   →    v16 = cast(v, bf16)         right after op
//                                              ... forward readers of v    (v dies after the last)
//   backward:  d = vjp_node(..., v, ...)       v32 = cast(v16, f32)        right before each reader
//                                              d = vjp_node(..., v32, ...)
//
// The forward is untouched, so the loss is bit for bit the same; the backward sees each saved
// activation rounded to bf16 (8 significant bits), which is what mixed-precision training does.
// Kept in f32: parameters (the master weights), inputs and other leaves, graph outputs (they live
// to the end anyway), the statistics the backward reads (layer norm's mean and rstd, attention's
// log-sum-exp: outputs after a node's first, which are small and need their precision), values
// that are not f32, values under `min_elements` (whose casts would cost more than they save), and
// values that do not wait: those for which the nodes run between their last forward reader and
// their first backward reader write fewer bytes than they hold (the logits, read last by the loss
// and first by its gradient: a bf16 copy widened back at once would only add a copy at the peak).
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
  int stored = 0;               // activations now kept in bf16
  int widened = 0;              // casts back to f32 in front of backward nodes
  size_t f32_bytes = 0;         // what the stored activations take in f32 (half of it is saved)
  std::vector<int> node_map;    // old node index → new (the graph's nodes before the pass)
  int first_backward_node = 0;  // where the backward starts now (its first widening cast)
};

// The backward is the nodes from `first_backward_node` on (those autodiff appended).
SavedActivations store_saved_activations_bf16(Graph& g, int first_backward_node, int64_t min_elements = 1024);

} // namespace pillars
