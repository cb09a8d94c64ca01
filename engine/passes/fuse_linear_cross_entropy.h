// fuse_linear_cross_entropy: a forward-graph rewrite that puts one `linear_cross_entropy` node
// (engine/ops/linear_cross_entropy.h) where a training step's graph ends in the language-model
// head and its loss:
//
//   x = matmul(h, W) trans_b        h (N, d), W (V, d)        (ops::linear without bias: the head)
//   L, lse = cross_entropy(x, t)    t (N) i32             →   L, dh°, dW° = linear_cross_entropy(h, W, t)
//
// The (N, V) logits x, a training step's largest buffer, then never exist: the node sweeps the
// rows in blocks of `block_rows` and makes the gradients of h and W as it goes. The pair is fused
// only when x has no other reader and is not a graph output, lse has no reader and is not an
// output (before autodiff nothing reads it), and the matmul is plain (no trans_a, alpha 1) with
// a 2-D f32 h and W and a hidden size d > 0. The loss keeps its meaning, so L's readers read the new L.
//
// Run it on a training step's forward graph, BEFORE autodiff (the backward is the op's vjp: it
// scales dh° and dW°). Never on an evaluation step: the node computes gradients. Like
// fuse_linear_activation, it builds a new graph, and the result maps old values and nodes to new
// ones (the logits and lse are gone).
#pragma once
#include <cstdint>

#include "engine/graph.h"
#include "engine/passes/copy_node.h"

namespace pillars {

// The default block: 32 MiB of logits. The size trades the scratch (which stays allocated, and must
// be well below the N·V floats of the logits for the fusion to save memory) against the passes over
// dW (each block adds its share into all of dW, V·d floats). On the CPU, with the `bench` model
// (V = 10,000, 4,000 rows), 8, 16 and 32 MiB blocks were all within the run-to-run noise of the
// unfused step's speed (±5 %), 2 MiB was 5 % slower, 32 MiB the fastest of them (`pillars bench
// step`). On a GPU it gives blocks of 838 rows at V = 10,000 (products of 838 × 10,000 × 512 for
// `base`); on an H200 the fused bf16 step was 4 % slower than the unfused one, its peak memory
// 0.89× (docs/PERFORMANCE.md, 2026-11-27); other block sizes not tried there.
constexpr int64_t kLinearCrossEntropyBlockBytes = int64_t{32} << 20;

// block_bytes: the scratch for one block of logits; block_rows = block_bytes / (4·V), at least 1
// and at most N.
RewrittenGraph fuse_linear_cross_entropy(const Graph& g, int64_t block_bytes = kLinearCrossEntropyBlockBytes);

} // namespace pillars
