// Neural-network ops: softmax, layer norm, embedding, dropout, masking, losses, similarities.
// Implementations: engine/ops/nn_*.cpp (each opens with its math), kernels in kernels/cpu/.
// Fused ops are checked against compositions of simpler ops or double-precision references
// (tests/test_ops_nn.cpp). Gradients are ordinary ops too (softmax_backward, layer_norm_backward,
// embedding_backward, cross_entropy_backward, ...), emitted by autodiff through each op's vjp.
#pragma once
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// softmax / log-softmax along `axis` (default last), statistics in f32. A row that is entirely
// −inf (fully masked) gives softmax 0 and log-softmax −inf, never NaN.
ValueId softmax(Graph& g, ValueId x, int64_t axis = -1);
ValueId log_softmax(Graph& g, ValueId x, int64_t axis = -1);
// The softmax vector-Jacobian product as an op: dx = y ∘ (dy − Σ_axis dy ∘ y), y = softmax(x).
ValueId softmax_backward(Graph& g, ValueId y, ValueId dy, int64_t axis = -1);

// Fused layer norm over the last axis: y = (x − mean) / sqrt(var + eps) · gamma + beta
//   x (..., D), gamma (D), beta (D) → y (..., D). gamma/beta may be kNoValue (no affine).
// The node also outputs the per-row mean and rstd = 1/sqrt(var + eps), shape (...), which the
// backward reads (g.producer(y).outputs[1], [2]); they take no gradient.
ValueId layer_norm(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps = 1e-5f);
// The same function composed of mean/sub/mul/sqrt/div ops (the test oracle).
ValueId layer_norm_reference(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps = 1e-5f);

// Embedding gather: table (V, D), ids i32 (...) → (..., D). Gradient: scatter-add into (V, D).
// An id outside [0, V) is an error reported by the kernel.
ValueId embedding(Graph& g, ValueId table, ValueId ids);

// Dropout with the counter-based RNG (kernels/philox.h): element i is kept when
// philox_uniform(seed, offset, i) >= p and scaled by 1/(1 − p). Same mask from the same
// (seed, offset) on any device; the backward regenerates it.
ValueId dropout(Graph& g, ValueId x, float p, uint64_t seed, uint64_t offset);

// y = where(mask != 0, value, x); mask is i32, broadcast to x's shape.
ValueId masked_fill(Graph& g, ValueId x, ValueId mask, float value);

// Cross-entropy of logits (N, V) against i32 targets (N), mean over targets != ignore_index,
// with label smoothing ε: loss_n = (1 − ε)·(−log p_t) + ε/V · Σ_v (−log p_v) (PyTorch's definition).
// Output: a scalar. (N with no valid target gives 0.) Also accepts logits (..., V) with targets (...).
// Fused: the node's second output is the per-row log-sum-exp (N), all the backward needs besides
// the logits (no (N, V) softmax is kept). A target outside [0, V) that is not ignore_index is an
// error reported by the kernel.
ValueId cross_entropy(Graph& g, ValueId logits, ValueId targets, float smoothing = 0.0f,
                      int64_t ignore_index = -100);

// Cosine similarity along `axis`: a·b / sqrt(max(‖a‖²·‖b‖², eps²)) (PyTorch 1.13's
// F.cosine_similarity); a and b have the same shape; the axis is removed from the output.
ValueId cosine_similarity(Graph& g, ValueId a, ValueId b, int64_t axis = -1, float eps = 1e-8f);

// Per-head Gram matrix for GHT (docs/METHOD.md §2): x (B, T, H, D) is a per-head feature map
// (e.g. V or O); lengths i32 (B) or kNoValue excludes padded positions t >= lengths[b].
// G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]  → (H, H). Gradient: dX = (dG + dGᵀ) X.
ValueId head_gram(Graph& g, ValueId x, ValueId lengths = kNoValue);

} // namespace pillars::ops
