// See gct_pass.h.
#include "ght/gct_pass.h"

#include <cmath>

#include "base/error.h"
#include "engine/ops.h"
#include "ght/ops.h"
#include "models/init.h"

namespace pillars::ght {

namespace {

// Module m's K-means draws start from seed + kModuleSeedStride·m, so the modules of one graph
// never share a k-means++ stream. Any odd stride would do; a prime keeps the modules' seeds apart
// from the small offsets (+1, +2, ...) that tests and callers add to a base seed. (The executor
// adds its per-update seed on top; voting mixes its seeds with base/splitmix64.h instead.)
constexpr uint64_t kModuleSeedStride = 7919;                        // the 1000th prime
constexpr const char* kInverseTokens = "gct.inverse_target_tokens"; // input f32 [] = 1 / target tokens
std::string classifier(const std::string& module) { return "ght." + module + ".classifier"; }

// Σ over a list of scalars (kNoValue when empty).
ValueId sum_of(Graph& g, const std::vector<ValueId>& xs) {
  ValueId total = kNoValue;
  for (ValueId x : xs) total = total == kNoValue ? x : ops::add(g, total, x);
  return total;
}

} // namespace

void add_gct_parameters(ParamStore& params, const TransformerConfig& cfg, const GctSettings& s, uint64_t seed) {
  if (!s.classification) return;
  PILLARS_CHECK(s.feature_map != FeatureMap::A,
                "GCT classification variant: feature map A has no fixed width "
                "(use V or O)");
  std::vector<init::ParamSpec> specs;
  for (const std::string& module : attention_modules(cfg)) {
    if (params.contains(classifier(module) + ".weight")) continue;
    specs.push_back({classifier(module) + ".weight", {s.groups, cfg.head_dim()}, init::Init::xavier_uniform, 1.0});
    specs.push_back({classifier(module) + ".bias", {s.groups}, init::Init::zeros});
  }
  init::init_parameters(specs, params, seed);
}

GctModuleLoss gct_module_loss(Graph& g, const AttentionSite& site, ValueId gram, size_t m, const GctSettings& s) {
  const ValueId labels = huds_cluster(g, gram, s.groups, s.seed + kModuleSeedStride * m); // i32 (H): HUDS
  if (!s.classification) { // Eq. 4(B): R = − α · hom + β · div
    const GctTerms t = gct_metric_loss(g, gram, labels, s.groups, s.alpha, s.beta);
    return {t.loss, t.homogenization, t.diversification};
  }
  // Eq. 4(A): each head's mean feature (H, Dh) → logits (H, C) → cross-entropy against its group.
  const HeadFeatures f = head_features(g, site, s.feature_map);
  const ValueId means = head_mean(g, f.x, f.lengths); // (H, Dh)
  const ValueId logits = ops::linear(g, means, g.param(classifier(site.module) + ".weight", {s.groups, site.head_dim}),
                                     g.param(classifier(site.module) + ".bias", {s.groups})); // (H, C)
  return {gct_classification_loss(g, logits, labels, s.alpha, s.beta)};
}

void gct(steps::StepGraph& step, const GctSettings& s) {
  Graph& g = step.graph;
  const size_t M = step.attention.size();
  if (M == 0) return;
  std::vector<ValueId> R, homogenization, diversification;
  for (size_t m = 0; m < M; ++m) {
    const AttentionSite& site = step.attention[m];
    const ValueId gram = feature_gram(g, site, s.feature_map); // G_m (H, H)
    const GctModuleLoss r = gct_module_loss(g, site, gram, m, s);
    R.push_back(r.R);
    if (r.homogenization != kNoValue)
      homogenization.push_back(r.homogenization), diversification.push_back(r.diversification);
  }
  ValueId total = sum_of(g, R); // Σ_m R_m, scalar
  step.name("gct.regularizer", total);
  step.log_term("gct_regularizer", total);
  if (!homogenization.empty()) { // the means over modules of the two cosine terms, for the log
    step.log_term("gct_homogenization", sum_of(g, homogenization), static_cast<double>(M));
    step.log_term("gct_diversification", sum_of(g, diversification), static_cast<double>(M));
  }
  if (s.per_token) {
    const ValueId inverse_tokens = step.add_input(kInverseTokens, {}, [](const steps::StepInfo& info) { // s, scalar
      Tensor t = Tensor::zeros({});
      t.data<float>()[0] = 1.0f / static_cast<float>(std::max<int64_t>(info.target_tokens, 1));
      return t;
    });
    total = ops::mul(g, total, inverse_tokens);
  }
  step.objective = ops::add(g, step.objective, total); // L_task + s · Σ_m R_m
}

} // namespace pillars::ght
