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
constexpr uint64_t kModuleSeedStride = 7919; // the 1000th prime
constexpr const char* kInverseTokens = "gct.inverse_target_tokens"; // input f32 [] = 1 / target tokens
std::string classifier(const std::string& module) { return "ght." + module + ".classifier"; }

// Σ over a list of scalars (kNoValue when empty).
ValueId sum_of(Graph& g, const std::vector<ValueId>& xs) {
  ValueId total = kNoValue;
  for (ValueId x : xs) total = total == kNoValue ? x : ops::add(g, total, x);
  return total;
}

} // namespace

void GctExtension::add_parameters(ParamStore& params, const TransformerConfig& cfg, uint64_t seed) const {
  if (!s_.classification) return;
  PILLARS_CHECK(s_.feature_map != FeatureMap::A, "GCT classification variant: feature map A has no fixed width "
                                                 "(use V or O)");
  std::vector<init::ParamSpec> specs;
  for (const std::string& module : attention_modules(cfg)) {
    if (params.contains(classifier(module) + ".weight")) continue;
    specs.push_back({classifier(module) + ".weight", {s_.groups, cfg.head_dim()}, init::Init::xavier_uniform, 1.0});
    specs.push_back({classifier(module) + ".bias", {s_.groups}, init::Init::zeros});
  }
  init::init_parameters(specs, params, seed);
}

void GctExtension::configure(GraphOptions& options, bool train) const {
  if (train) request_feature_map(options, s_.feature_map);
}

ValueId GctExtension::extend(Graph& g, const std::vector<AttentionSite>& sites, ValueId loss, bool train) {
  if (!train) return loss;
  std::vector<ValueId> regularisers, homogenisation, diversification;
  for (size_t m = 0; m < sites.size(); ++m) {
    const AttentionSite& site = sites[m];
    const ValueId gram = feature_gram(g, site, s_.feature_map);                           // (H, H)
    const ValueId labels = huds_cluster(g, gram, s_.groups, s_.seed + kModuleSeedStride * m); // i32 (H)
    if (s_.classification) {
      const HeadFeatures f = head_features(g, site, s_.feature_map);
      const ValueId means = head_mean(g, f.x, f.lengths);                                // (H, Dh)
      const ValueId logits = ops::linear(g, means, g.param(classifier(site.module) + ".weight", {s_.groups, site.head_dim}),
                                         g.param(classifier(site.module) + ".bias", {s_.groups})); // (H, C)
      regularisers.push_back(gct_classification_loss(g, logits, labels, s_.alpha, s_.beta));
    } else {
      const GctTerms t = gct_metric_loss(g, gram, labels, s_.groups, s_.alpha, s_.beta);
      regularisers.push_back(t.loss);
      homogenisation.push_back(t.homogenisation);
      diversification.push_back(t.diversification);
    }
  }
  if (regularisers.empty()) return loss;
  Added& added = added_[&g];
  added.modules = sites.size();
  ValueId r = added.regulariser = sum_of(g, regularisers); // Σ_m R_m, scalar
  g.mark_output(r);
  if (!homogenisation.empty()) { // the monitoring terms, summed over modules
    g.mark_output(added.homogenisation = sum_of(g, homogenisation));
    g.mark_output(added.diversification = sum_of(g, diversification));
  }
  if (s_.per_token) r = ops::mul(g, r, g.input(kInverseTokens, {}, DType::f32));
  return ops::add(g, loss, r);
}

void GctExtension::bind(Executor& ex, const Graph& g, const train::StepInfo& info) {
  const ValueId inv = g.find_input(kInverseTokens);
  if (inv == kNoValue) return;
  Tensor t = Tensor::zeros({});
  t.data<float>()[0] = 1.0f / static_cast<float>(std::max<int64_t>(info.target_tokens, 1));
  ex.bind(inv, t);
}

void GctExtension::after_run(const Executor& ex, const Graph& g, const train::StepInfo& info) {
  const auto it = added_.find(&g);
  if (!info.train || it == added_.end()) return;
  const Added& a = it->second;
  auto scalar = [&](ValueId v) { return static_cast<double>(ex.fetch(v).data<float>()[0]); };
  terms_.regulariser += scalar(a.regulariser);
  if (a.homogenisation != kNoValue) {
    terms_.homogenisation += scalar(a.homogenisation) / static_cast<double>(a.modules);
    terms_.diversification += scalar(a.diversification) / static_cast<double>(a.modules);
  }
  ++terms_.runs;
}

void GctExtension::log_terms(nlohmann::json& line) {
  const Terms t = take_terms();
  if (t.runs == 0) return;
  line["gct_regularizer"] = t.regulariser;
  if (!s_.classification) {
    line["gct_homogenisation"] = t.homogenisation;
    line["gct_diversification"] = t.diversification;
  }
}

GctExtension::Terms GctExtension::take_terms() {
  Terms t = terms_;
  if (t.runs > 0) t.homogenisation /= t.runs, t.diversification /= t.runs, t.regulariser /= t.runs;
  terms_ = {};
  return t;
}

} // namespace pillars::ght
