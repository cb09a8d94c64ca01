// Head diversity of a whole model, measured on a fixed held-out batch in evaluation mode
// (docs/METHOD.md §7). For every attention module:
//   * the four metrics of "X-Raying Multi-head Attention", raw and normalized (ght/xray.h);
//   * the cosine similarities of the heads' chosen GHT feature map (V | A | O), from its Gram
//     matrix over the valid positions: cos_ij = G_ij / sqrt(G_ii G_jj);
//   * HUDS: K-means of the heads from that Gram matrix (ght/kmeans.h, C = groups, the given seed),
//     and the compactness of the clustering: Dunn index and Silhouette (the paper's Fig. 2), the
//     Silhouette in both conventions of ght/kmeans.h: "silhouette" (standard: a singleton scores
//     0) and "silhouette_ght" (the authors' Fig. 2 script: a divides by the group size, a
//     singleton scores 1);
//   * the two GCT terms of Eq. 4(B) for that clustering (docs/METHOD.md §4):
//       homogenization  = (1/k) Σ_i cos(e_i, μ_c(i))            (heads toward their group center)
//       diversification = mean over group pairs a < b of cos(μ_a, μ_b)   (0 with one group)
//
//   steps::Seq2SeqBatch batch = held_out_batch(data, /*sentences=*/64, pad, eos);   // once
//   HeadMetrics m = measure_head_metrics(cfg, params, batch, {.feature_map = FeatureMap::V, .groups = 2});
//   m.update = state.updates, m.epoch = state.epoch;
//   log << to_json(m).dump() << "\n";
//
// The measurement builds the model's graph with train = false (no dropout), attention_probs and
// target_lengths, keeps every module's q, v, out and probs, and runs it once. It does not touch the
// parameters. Cost: one forward pass plus the X-Raying products (kernels/cpu/xray.h), N·(H·D)²
// multiply-adds per module (a few CPU-seconds in all for the base model on 32 sentences). The
// marked outputs keep every module's probabilities, B·H·Tq·Tk floats each, alive until the run ends.
//
// JSON (to_json), one object per measurement; other tools (the trainer's log, the HTML report)
// read exactly these keys:
//   {"type": "head_metrics", "update": U, "epoch": E, "feature_map": "V", "groups": C,
//    "modules": [{"module": "encoder.layers.0.self_attn", "heads": H,
//                 "orthogonality": x, "orthogonality_norm": x, "context_nonorth": x,
//                 "context_nonorth_norm": x, "output_dissimilarity": x,
//                 "attention_variance": [H values], "attention_variance_mean": x,
//                 "similarity": [[H × H cosines of the feature map]], "labels": [H ints],
//                 "dunn": x, "silhouette": x, "silhouette_ght": x,
//                 "homogenization": x, "diversification": x,
//                 "pairs": {"orthogonality": [[H × H]], "orthogonality_norm": [[...]],
//                           "context_nonorth": [[...]], "context_nonorth_norm": [[...]],
//                           "output_dissimilarity": [[...]]}}, ...]}
// Scalars of (1)–(3) are means over head pairs i < j; a number that is not finite is written as
// null (the Dunn index is +inf when every group has one member; a one-head module has no pairs).
// "groups" is the requested C; a module with fewer heads is clustered with C = its head count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/params.h"
#include "ght/xray.h"
#include "models/transformer.h"
#include "steps/batching.h"
#include "steps/task.h"

namespace pillars::ght {

struct HeadMetricsOptions {
  FeatureMap feature_map = FeatureMap::V; // the GHT feature map clustered (docs/METHOD.md §2)
  int groups = 2;                         // C of HUDS
  uint64_t seed = 1;                      // K-means initialization (the same for every module)
};

struct ModuleHeadMetrics {
  std::string module; // "decoder.layers.1.encoder_attn"
  XrayMetrics xray;
  std::vector<double> similarity; // (H × H) cosines of the feature map
  std::vector<int> labels;        // (H) HUDS group of each head
  double dunn = 0, silhouette = 0, silhouette_ght = 0, homogenization = 0, diversification = 0;
};

struct HeadMetrics {
  int64_t update = 0, epoch = 0; // filled in by the caller
  FeatureMap feature_map = FeatureMap::V;
  int groups = 0;
  std::vector<ModuleHeadMetrics> modules; // in graph order
};

nlohmann::json to_json(const HeadMetrics& m);
// Readers of head_metrics.jsonl and log.jsonl pass each module object and each log line through
// this. Older files spell two keys the British way; each is copied to its current name, unless
// the current name is already there. The list is in head_metrics.cpp.
void read_legacy_keys(nlohmann::json& object);

// B blocks of T tokens of a language model's token stream (steps/task.h's make_lm_batch):
// tokens and target (B·T) each, right-padded.
struct LmBatch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> tokens, target;
};

// Measures every attention module of the model (cfg, params) on the batch.
HeadMetrics measure_head_metrics(const TransformerConfig& cfg, ParamStore& params, const steps::Seq2SeqBatch& batch,
                                 const HeadMetricsOptions& options);
HeadMetrics measure_head_metrics(const TransformerConfig& cfg, ParamStore& params, const LmBatch& batch,
                                 const HeadMetricsOptions& options);

// One module's measurement from its tensors (what measure_head_metrics does per module).
ModuleHeadMetrics measure_module(const std::string& module, const ModuleTensors& t, const HeadMetricsOptions& options);

// The two GCT terms from a Gram matrix G (k × k) and a labeling into C groups (empty groups are
// left out; diversification is 0 when fewer than two groups have members).
struct GroupCosines {
  double homogenization = 0, diversification = 0;
};
GroupCosines group_cosines(const std::vector<double>& G, int k, const std::vector<int>& labels, int C);

// ---- the fixed held-out batch ---------------------------------------------------------------------
// Deterministic: the first pairs of the validation split (or the first blocks of its stream), in
// order, each side padded to its longest sentence. The trainer picks it once from its
// Seq2SeqData / LmData (heads.metrics_sentences of them); `pillars metrics` from the split it reads.

// The first min(sentences, size) pairs. Throws InputError when there is none.
steps::Seq2SeqBatch held_out_batch(const std::vector<std::vector<int32_t>>& src,
                                   const std::vector<std::vector<int32_t>>& tgt, int64_t sentences, int32_t pad,
                                   int32_t eos);
steps::Seq2SeqBatch held_out_batch(const steps::Seq2SeqData& data, int64_t sentences, int32_t pad, int32_t eos);
// The first min(blocks, available) blocks of block_size tokens. Throws InputError when there is none.
LmBatch held_out_lm_batch(const std::vector<int32_t>& stream, int64_t block_size, int64_t blocks, int32_t pad);
LmBatch held_out_batch(const steps::LmData& data, int64_t block_size, int64_t blocks, int32_t pad);

} // namespace pillars::ght
