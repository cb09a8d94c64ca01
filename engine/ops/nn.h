// Neural-network ops: softmax, layer norm, embedding, dropout, masking, losses, similarities.
// Implementations: engine/ops/nn_*.cpp (each opens with its math), kernels in kernels/cpu/.
// Fused ops are checked against compositions of simpler ops or double-precision references
// (tests/test_ops_nn.cpp). Gradients are ordinary ops too (softmax_backward, layer_norm_backward,
// embedding_backward, cross_entropy_backward, ...), emitted by autodiff through each op's vjp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// ---- parameters (params_of<P>(node), engine/graph.h) ----
// embedding, head_gram and their backward ops' inputs say all; they have no parameters.

// softmax, log_softmax and their backward ops.
struct SoftmaxParams {
  int64_t axis = 0; // the normalised axis, stored non-negative (the builders normalise it)
};

// layer_norm: inputs x [, gamma] [, beta] — the flags say which are present.
struct LayerNormParams {
  float eps = 1e-5f;      // added to the variance under the square root
  bool has_gamma = false; // input 1 is gamma (the scale)
  bool has_beta = false;  // beta (the shift) is the last input: beta_input()
  size_t beta_input() const { return has_gamma ? 2 : 1; } // beta's input index, when has_beta
};

// layer_norm_backward: inputs x, mean, rstd, dy [, gamma]; outputs dx [, dgamma, dbeta].
struct LayerNormBackwardParams {
  bool has_gamma = false;   // input 4 is gamma (dx then goes through it)
  bool param_grads = false; // also output dgamma and dbeta (D): some affine input needs a gradient
};

// embedding_backward: dout (..., D), ids (...) → dtable (vocab, D).
struct EmbeddingBackwardParams {
  int64_t vocab = 0; // V, the table's first extent
};

// dropout (its gradient is the same op with the same parameters).
struct DropoutParams {
  float p = 0.0f;           // the probability of zeroing an element, in [0, 1]
  uint64_t seed = 0;        // the stream's seed; the executor's run seed is added at run time
  uint64_t rng_offset = 0;  // where in the stream element 0 draws (kernels/philox.h)
};

struct MaskedFillParams {
  float value = 0.0f; // written where the mask is non-zero (−inf for attention masks)
};

// cross_entropy and cross_entropy_backward.
struct CrossEntropyParams {
  float smoothing = 0.0f;      // label smoothing ε in [0, 1]
  int64_t ignore_index = -100; // rows with this target count neither in the loss nor in the mean
};

// The op itself, for passes that match nodes (engine/passes/fuse_linear_cross_entropy.cpp).
extern const OpDef kCrossEntropy;

// ---- builders ----

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


// Per-head Gram matrix for GHT (docs/METHOD.md §2): x (B, T, H, D) is a per-head feature map
// (e.g. V or O); lengths i32 (B) or kNoValue excludes padded positions t >= lengths[b].
// G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]  → (H, H). Gradient: dX = (dG + dGᵀ) X.
ValueId head_gram(Graph& g, ValueId x, ValueId lengths = kNoValue);

} // namespace pillars::ops
