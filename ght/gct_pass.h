// The GCT pass (docs/METHOD.md §4): group-constrained training, one function on the step graph.
//
// For every attention module m of a training step, before autodiff:
//   G_m      = head_gram(FM_m)                      (H, H)  the chosen feature map's Gram matrix
//   labels_m = huds_cluster(G_m, C)                 (H)     HUDS: K-means, redone every batch
//   R_m      = gct_metric_loss(G_m, labels_m, α, β)        Eq. 4(B)   (or Eq. 4(A), below)
//   loss     = L_task + s · Σ_m R_m,   s = 1 / (target tokens of the batch)  (scale per_token)
//                                       s = 1                                  (scale per_batch)
// L_task is the mean per-token cross-entropy, so with per_token the paper's α, β act per token as
// in the reference code (which adds Σ R_m to the token-summed loss and divides by the token count).
// s is the run-time input "gct.inverse_target_tokens", filled from StepInfo before every run.
//
// What the pass records in the StepGraph: Σ_m R_m as "gct.regularizer", logged as
// "gct_regularizer"; with Eq. 4(B) also the means over modules of its two cosine terms, logged as
// "gct_homogenization" and "gct_diversification".
//
// The classification variant (Eq. 4(A)) gives each module a linear classifier W_m (C, F), b_m (C)
// — extra parameters "ght.<module>.classifier.{weight,bias}", created by add_gct_parameters() —
// that predicts each head's group from its feature map averaged over the valid tokens (F = Dh, so
// it works with V and O, not A whose width is the key length).
#pragma once
#include <cstdint>

#include "engine/params.h"
#include "ght/feature_maps.h"
#include "steps/pass.h"

namespace pillars::ght {

struct GctSettings {
  FeatureMap feature_map = FeatureMap::V;
  int groups = 2;                  // C
  float alpha = 0.7f, beta = 0.5f; // homogenization, diversification weights
  bool classification = false;     // Eq. 4(A) instead of 4(B)
  bool per_token = true;           // scale Σ R_m by 1 / target tokens
  uint64_t seed = 1;               // HUDS initialization (plus the executor's per-update seed)
};

// The classifier parameters of the classification variant (nothing for 4(B)); call before
// training, after the model's own parameters exist.
void add_gct_parameters(ParamStore& params, const TransformerConfig& cfg, const GctSettings& s, uint64_t seed);

// R_m of one module m from its Gram matrix G_m (H, H): the scalar loss of Eq. 4(B), or Eq. 4(A)
// with the module's classifier; also the two cosine terms of 4(B) (kNoValue for 4(A)).
struct GctModuleLoss {
  ValueId R = kNoValue, homogenization = kNoValue, diversification = kNoValue;
};
GctModuleLoss gct_module_loss(Graph& g, const AttentionSite& site, ValueId gram, size_t module_index,
                              const GctSettings& s);

// The pass: objective += s · Σ_m R_m (above).
void gct(steps::StepGraph& step, const GctSettings& s);

} // namespace pillars::ght
