// See feature_maps.h.
#include "ght/feature_maps.h"

#include "base/error.h"
#include "engine/ops.h"

namespace pillars::ght {

void request_feature_map(GraphOptions& options, FeatureMap fm) {
  options.target_lengths = true;
  if (fm == FeatureMap::A) options.attention_probs = true;
}

HeadFeatures head_features(Graph& g, const AttentionSite& site, FeatureMap fm) {
  switch (fm) {
    case FeatureMap::V:
      return {site.v, site.key_lengths};
    case FeatureMap::O:
      return {site.out, site.query_lengths};
    case FeatureMap::A:
      PILLARS_CHECK(site.probs != kNoValue, site.module, ": feature map A needs GraphOptions::attention_probs");
      return {ops::permute(g, site.probs, {0, 2, 1, 3}), site.query_lengths}; // (B, Tq, H, Tk)
  }
  return {};
}

ValueId feature_gram(Graph& g, const AttentionSite& site, FeatureMap fm) {
  const HeadFeatures f = head_features(g, site, fm);
  return ops::head_gram(g, f.x, f.lengths); // (H, H)
}

} // namespace pillars::ght
