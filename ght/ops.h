// The graph ops of the GHT method (docs/METHOD.md §2–§4, §6), all on the k × k Gram matrix of a
// module's heads (ops::head_gram, engine/ops/head_gram.h), so the feature maps are never copied:
//
//   G      = ops::head_gram(g, site.v, lengths);                  // (H, H), differentiable
//   labels = huds_cluster(g, G, /*groups=*/2, seed);              // i32 (H): K-means, no gradient
//   R      = gct_metric_loss(g, G, labels, 2, alpha, beta);       // scalar R_m of Eq. 4(B)
//
// HUDS runs inside the graph as a kernel, so the K-means of every module is redone on every batch
// (the reference code's behavior) without leaving the executor; the seed of each run is
// HudsClusterParams::seed + the executor's run seed, so clustering is deterministic for a run and
// an update.
#pragma once
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ght {

// ---- the ops' parameters (params_of<P>(node), engine/graph.h) ----
// head_mean and mean_pairwise_cosine have none.

// huds_cluster.
struct HudsClusterParams {
  int64_t groups = 1; // C, the number of K-means groups (1 <= C <= heads)
  uint64_t seed = 0;  // K-means++'s seed; the executor's run seed is added at run time
};

// gct_metric_loss and gct_metric_loss_backward: R = − α · hom + β · div.
struct GctMetricParams {
  int64_t groups = 1; // C, the number of groups the labels range over (>= 1)
  float alpha = 1.0f; // α, the weight of the homogenization term
  float beta = 1.0f;  // β, the weight of the diversification term
};

// head_mean_backward: dy (H, D) [, lengths] → dx of x's shape.
struct HeadMeanBackwardParams {
  Shape x_shape; // (B, T, H, D), the forward input's shape
};

// gct_classification_loss and its backward: R = (1/k) Σ_i [α·CE_i − β/(C−1)·Σ_{v≠c(i)} log(1 − p_i(v))].
struct GctClassificationParams {
  float alpha = 1.0f; // α, the weight of the cross-entropy towards the assigned group
  float beta = 1.0f;  // β, the weight of −log(1 − p) of the other groups (pushes the head away from them)
};

// ---- builders ----

// K-means (ght/kmeans.h) over the heads, from G (H, H) f32 → labels i32 (H). Not differentiable
// (labels are constants for the loss, as in the paper: the centroids are means of the members).
ValueId huds_cluster(Graph& g, ValueId gram, int groups, uint64_t seed);

// Eq. 4(B), with the signs docs/METHOD.md §4 explains:
//   R = − α · (1/k) Σ_i cos(e_i, μ_{c(i)}) + β · (1/C(C,2)) Σ_{a<b} cos(μ_a, μ_b)
// from G (H, H) and labels i32 (H) → R (scalar). Groups without members are left out of both
// terms (and of the pair count); with one group the second term is 0. The node has two more
// scalar outputs, for logging: the homogenization mean cos (1/k Σ_i cos(e_i, μ_c(i))) and the
// diversification mean cos (mean over pairs of cos(μ_a, μ_b)); they are differentiable too (a
// loss may weight them itself). cos(x, y) = ⟨x, y⟩ / sqrt(max(‖x‖²‖y‖², eps²)), eps = kCosineEps
// (ght/kmeans.h), so a zero-norm head gives 0, not NaN.
// Gradient: dG in closed form (labels fixed), computed in double; dG_ij is ∂R/∂G_ij of the formula
// as written (not symmetrised: head_gram's backward uses dG + dGᵀ). Formulas: ght/ops.cpp.
struct GctTerms {
  ValueId loss = kNoValue, homogenization = kNoValue, diversification = kNoValue;
};
GctTerms gct_metric_loss(Graph& g, ValueId gram, ValueId labels, int groups, float alpha, float beta);

// Eq. 4(A), the classification variant. head_mean: x (B, T, H, D), lengths i32 (B) or kNoValue →
// (H, D), each head's feature averaged over the valid tokens (differentiable; 0 when no token is
// valid). A per-module linear classifier maps it to logits (H, C) (the caller builds it with
// matmul + bias); then, averaged over the k = H heads (docs/METHOD.md §4):
//   R = (1/k) Σ_i [ −α · log p_i(c(i)) − β/(C−1) · Σ_{v ≠ c(i)} log(1 − p_i(v)) ]
// from logits (H, C) and labels i32 (H) → scalar (p_i = softmax(logits_i); the second term is
// absent when C = 1). Both terms fall as the head's own group wins: α pulls it to its group, β
// pushes it from each other group (bounded below by 0; with C = 2 R = (α+β)·CE). log(1 − p_v) is
// computed as LSE_{u≠v} z_u − LSE_u z_u. Gradient and its derivation: ght/ops.cpp.
ValueId head_mean(Graph& g, ValueId x, ValueId lengths = kNoValue);
ValueId gct_classification_loss(Graph& g, ValueId logits, ValueId labels, float alpha, float beta);

// Li et al. 2018's disagreement, from G (H, H) → scalar: the mean over pairs i ≠ j of
// G_ij / sqrt(max(G_ii · G_jj, eps²)) (the cosine of two heads' flattened feature maps, clamped as
// above; 0 when H = 1). The regularizer −λ·D with D = −mean cos adds +λ · this value to the loss.
ValueId mean_pairwise_cosine(Graph& g, ValueId gram);

} // namespace pillars::ght
