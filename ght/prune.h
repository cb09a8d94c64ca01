// The prune pass of V2S (docs/METHOD.md §5): removes attention heads for real.
//
//   HeadSelection keep = {{"encoder.layers.0.self_attn", {1, 6}}, ...};  // heads that stay
//   PrunedModel ps = prune_heads(cfg, params, keep);
//   // ps.cfg.module_heads["encoder.layers.0.self_attn"] == 2; ps.params is smaller
//
// In a module with H heads of width Dh = d/H, head h owns rows [h·Dh, (h+1)·Dh) of W^Q, W^K, W^V
// (each (H·Dh, d)) and of their biases, and columns [h·Dh, (h+1)·Dh) of W^out (d, H·Dh):
//
//   out = Σ_h O_h · W^out[:, h·Dh:(h+1)·Dh]ᵀ + b^out,   O_h = softmax(Q_h K_hᵀ/√Dh) V_h
//
// so dropping head h from the sum is dropping those slices. W^out's bias and everything outside
// the attention modules stay as they are. The pruned model computes exactly what the unpruned one
// computes with the removed heads' outputs multiplied by 0 (tests/test_ght_prune.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/optim/optimizer.h"
#include "engine/params.h"
#include "models/transformer.h"

namespace pillars::ght {

// Module name → indices of the heads it keeps (ascending, distinct, within [0, heads)). Modules not
// listed keep every head.
using HeadSelection = std::map<std::string, std::vector<int>>;

struct PrunedModel {
  TransformerConfig cfg; // cfg.module_heads records every pruned module's head count
  ParamStore params;     // exactly transformer_parameters(cfg), in that order
};

// Throws InputError for an unknown module, a bad index or an empty selection. Parameters of `params`
// that are not the transformer's own (head gates, GCT classifiers) are not carried over.
PrunedModel prune_heads(const TransformerConfig& cfg, const ParamStore& params, const HeadSelection& keep);

// The optimizer state of the pruned model, from the unpruned model's (engine/optim/optimizer.h:
// "step", "<param>.step", "<param>.<buffer>"): every buffer shaped like a parameter (Adam's first
// and second moments m and v, AMSGrad's max v, SGD's momentum) is sliced exactly as prune_heads
// slices that parameter, so the kept heads keep their moments element for element:
//
//   m'[W^Q of module] = m[W^Q][rows of the kept heads],  m'[W^out] = m[W^out][:, columns of the kept heads]
//
// and an optimizer that continues from it updates the kept weights exactly as the unpruned one
// would have with the removed heads' gradients dropped. The step counts (the optimizer's and each
// parameter's t, which Adam's bias correction 1 − βᵗ reads) stay as they are. Entries of parameters
// the pruned model does not have (head gates, GCT classifiers) are left out. Throws InputError for
// a bad selection and for a buffer that does not have its parameter's unpruned shape.
optim::NamedTensors prune_optimizer_state(const TransformerConfig& cfg, const optim::NamedTensors& state,
                                          const HeadSelection& keep);

// A JSON summary for prune.json: parameters before/after (with and without embeddings) and, per
// module, the head count before and the heads kept.
struct PruneSummary {
  int64_t params_before = 0, params_after = 0, params_before_no_embeddings = 0, params_after_no_embeddings = 0;
  std::vector<std::pair<std::string, std::pair<int64_t, std::vector<int>>>> modules; // module → (heads before, kept)
};
PruneSummary summarize_pruning(const TransformerConfig& cfg, const ParamStore& before, const PrunedModel& after,
                               const HeadSelection& keep);

} // namespace pillars::ght
