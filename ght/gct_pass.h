// The GCT pass (docs/METHOD.md §4): group-constrained training as a graph extension.
//
// For every attention module m of a training graph, before autodiff:
//   G_m      = head_gram(FM_m)                      (H, H)  the chosen feature map's Gram matrix
//   labels_m = huds_cluster(G_m, C)                 (H)     HUDS: K-means, redone every batch
//   R_m      = gct_metric_loss(G_m, labels_m, α, β)        Eq. 4(B)   (or Eq. 4(A), below)
//   loss     = L_task + s · Σ_m R_m,   s = 1 / (target tokens of the batch)  (scale per_token)
//                                       s = 1                                  (scale per_batch)
// L_task is the mean per-token cross-entropy, so with per_token the paper's α, β act per token as
// in the reference code (which adds Σ R_m to the token-summed loss and divides by the token count).
// Evaluation graphs are left alone (validation measures the task loss only).
//
// The classification variant (Eq. 4(A)) gives each module a linear classifier W_m (C, F), b_m (C)
// — extra parameters "ght.<module>.classifier.{weight,bias}", created by add_parameters() — that
// predicts each head's group from its feature map averaged over the valid tokens (F = Dh, so it
// works with V and O, not A whose width is the key length).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/params.h"
#include "ght/feature_maps.h"
#include "steps/extension.h"

namespace pillars::ght {

struct GctSettings {
  FeatureMap feature_map = FeatureMap::V;
  int groups = 2;                  // C
  float alpha = 0.7f, beta = 0.5f; // homogenisation, diversification weights
  bool classification = false;     // Eq. 4(A) instead of 4(B)
  bool per_token = true;           // scale Σ R_m by 1 / target tokens
  uint64_t seed = 1;               // HUDS initialisation (plus the executor's per-update seed)
};

class GctExtension : public train::GraphExtension {
 public:
  explicit GctExtension(GctSettings s) : s_(s) {}
  // The classifier parameters of the classification variant (nothing for 4(B)); call before
  // training, after the model's own parameters exist.
  void add_parameters(ParamStore& params, const TransformerConfig& cfg, uint64_t seed) const;

  void configure(GraphOptions& options, bool train) const override;
  const char* pass_name() const override { return "gct"; }
  ValueId extend(Graph& g, const std::vector<AttentionSite>& sites, ValueId loss, bool train) override;
  void bind(Executor& ex, const Graph& g, const train::StepInfo& info) override;
  void after_run(const Executor& ex, const Graph& g, const train::StepInfo& info) override;
  // "gct_regularizer" (Σ_m R_m before the per-token scale), "gct_homogenisation" and
  // "gct_diversification" (means over modules of the two cosine terms), averaged since the last call.
  void log_terms(nlohmann::json& line) override;

  // Mean over modules of the two terms of Eq. 4(B) (mean cos to the own centroid, mean cos between
  // centroids) and of Σ_m R_m, averaged over the training runs since the last call.
  struct Terms {
    double homogenisation = 0, diversification = 0, regulariser = 0;
    int64_t runs = 0;
  };
  Terms take_terms();

 private:
  // What extend() added to each graph (the graphs outlive this map's use: steps/steps.h keeps them).
  struct Added {
    ValueId regulariser = kNoValue, homogenisation = kNoValue, diversification = kNoValue; // Σ over modules
    size_t modules = 0;
  };
  GctSettings s_;
  std::map<const Graph*, Added> added_;
  Terms terms_;
};

} // namespace pillars::ght
