// The per-head feature maps of GHT (docs/METHOD.md §2) as graph values, and their Gram matrix.
//
//   V  the value projection X W^V_i      site.v      (B, Tk, H, Dh), valid rows: key_lengths
//   O  the head output A_i V_i           site.out    (B, Tq, H, Dh), valid rows: query_lengths
//   A  the attention probabilities       site.probs  (B, H, Tq, Tk) → permuted to (B, Tq, H, Tk),
//                                                     valid rows: query_lengths (padded keys have
//                                                     probability 0 already)
// Padding positions are left out of the Gram matrix (the reference code kept them).
#pragma once
#include <string>

#include "ght/settings.h"
#include "models/transformer.h"

namespace pillars::ght {

// FeatureMap (V, A, O) and its names: ght/settings.h.

// The model options a feature map needs: A needs the attention nodes to emit probabilities; all
// need the decoder's target lengths so decoder-side padding is excluded.
void request_feature_map(GraphOptions& options, FeatureMap fm);

struct HeadFeatures {
  ValueId x = kNoValue;       // (B, T, H, F): the map with heads on axis 2
  ValueId lengths = kNoValue; // i32 (B): valid rows of T (kNoValue: all)
};
HeadFeatures head_features(Graph& g, const AttentionSite& site, FeatureMap fm);

// G = E Eᵀ (H, H) over the valid positions: ops::head_gram of head_features.
ValueId feature_gram(Graph& g, const AttentionSite& site, FeatureMap fm);

} // namespace pillars::ght
