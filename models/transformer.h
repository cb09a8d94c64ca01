// The encoder-decoder transformer (Vaswani et al. 2017) as fairseq's `transformer` architecture
// builds it: what the GHT paper trains for translation and summarization.
//
//   TransformerConfig cfg = transformer_config("base");        // or fill the fields yourself
//   cfg.vocab = dictionary.size();
//   ParamStore params;
//   init_transformer_params(cfg, params, /*seed=*/1);         // every parameter, fairseq's init
//   Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, /*label_smoothing=*/0.1f,
//                                                 /*dropout_seed=*/step_seed, /*train=*/true);
//   auto grads = autodiff(m.graph, m.loss, m.graph.params());  // (after GHT passes add their losses)
//   Executor ex(m.graph);  ex.bind_params(params);
//   ex.bind("src_tokens", ...); ex.bind("src_lengths", ...);
//   ex.bind("prev_output_tokens", ...); ex.bind("target", ...);  ex.run();
//
// Parameters carry fairseq/PyTorch names ("encoder.layers.0.self_attn.q_proj.weight"), so a
// fairseq checkpoint's tensors map one to one. The decoder's output projection is its input
// embedding (share_decoder_input_output_embed): the graph asks for the same parameter twice and
// autodiff sums both gradients. Batches are right-padded with pad_id.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/special_tokens.h"
#include "engine/graph.h"
#include "engine/ops/linear_act.h"
#include "engine/params.h"
#include "models/init.h"
#include "models/transformer_config.h"

namespace pillars {

// Named configurations (the experiment file refers to them by name; vocab is a placeholder the
// dataset's dictionary overrides):
//   "tiny"   2+2 layers, d 16, 2 heads, FFN 32, vocab 32, all dropouts 0.1   (tests)
//   "small"  3+3 layers, d 256, 4 heads, FFN 1024, dropout 0.1                 (CPU default, Multi30k)
//   "bench"  3+3 layers, d 256, 8 heads, FFN 1024, vocab 10000                 (benchmarks)
//   "base"   6+6 layers, d 512, 8 heads, FFN 2048, vocab 10000, dropout 0.3   (IWSLT recipe)
//   "lite1"  base with 4+4 layers                  (Transformer-Lite1, ~30M without embeddings)
//   "lite2"  base with d 424, FFN 1696             (Transformer-Lite2, ~30M without embeddings)
// Decoder-only language models (decoder_only = true, tied input/output embeddings):
//   "lm-small"  4 layers, d 256, 4 heads, FFN 1024, dropout 0.1                 (CPU)
//   "lm-wt103"  16 layers, d 1024, 16 heads, FFN 4096, pre-norm, dropout 0.3, attention and
//               activation dropout 0.1 (fairseq's transformer_lm_wiki103 without adaptive input)
TransformerConfig transformer_config(const std::string& name);
std::vector<std::string> transformer_config_names();

// Where the token tables live (they depend on the sharing flags): the encoder's table, the decoder's
// input table, and the (V, d) matrix of the output projection (the decoder's table when tied).
std::string encoder_embedding_name(const TransformerConfig& cfg);
std::string decoder_embedding_name(const TransformerConfig& cfg);
std::string output_projection_name(const TransformerConfig& cfg);

// The attention modules of the model in graph order ("encoder.layers.0.self_attn", ...,
// "decoder.layers.0.self_attn", "decoder.layers.0.encoder_attn", ...): 18 for a 6+6 model.
std::vector<std::string> attention_modules(const TransformerConfig& cfg);

// Every parameter of the model, with its shape and fairseq's initialization, in creation order.
std::vector<init::ParamSpec> transformer_parameters(const TransformerConfig& cfg);
// Creates and initializes all of them in `store` (seeded, deterministic: models/init.h).
void init_transformer_params(const TransformerConfig& cfg, ParamStore& store, uint64_t seed);

// Number of parameter elements. include_embeddings=false leaves out the token tables and an untied
// output projection (the paper's accounting). matrices_only=true also leaves out biases and
// layer-norm vectors (rank-1 tensors), i.e. counts only weight matrices.
int64_t count_parameters(const ParamStore& store, bool include_embeddings, bool matrices_only = false);

// ---- the graph ----------------------------------------------------------------------------------

// One attention module of a built graph, as recorded for the GHT passes (HUDS, GCT, V2S, head
// metrics; docs/METHOD.md). THIS IS THE HOOK: a pass that needs per-head feature maps reads them
// from here and appends its own nodes (e.g. ops::head_gram on `v` or `out`, then the GCT loss) to
// the graph *before* autodiff runs, so the feature maps get their gradients like any other value.
// V and O cost nothing extra (they are values the forward computes anyway); A exists only when
// GraphOptions::attention_probs asked the attention nodes to emit it.
struct AttentionSite {
  std::string module; // "encoder.layers.0.self_attn", "decoder.layers.1.encoder_attn", ...
  int64_t heads = 0, head_dim = 0;
  ValueId q = kNoValue;             // (B, Tq, H, Dh) per-head queries
  ValueId k = kNoValue;             // (B, Tk, H, Dh) per-head keys
  ValueId v = kNoValue;             // (B, Tk, H, Dh) per-head values: GHT's "V"
  ValueId out = kNoValue;           // (B, Tq, H, Dh) A·V per head, before out_proj: GHT's "O"
  ValueId probs = kNoValue;         // (B, H, Tq, Tk) softmax probabilities before dropout: GHT's "A"
  ValueId gate = kNoValue;          // (H) the head gates ξ, when the head_gates pass gated the module
  ValueId query_lengths = kNoValue; // i32 (B): valid query rows (src_lengths, or tgt_lengths if declared)
  ValueId key_lengths = kNoValue;   // i32 (B): valid key rows (src_lengths, or tgt_lengths if declared)
  bool causal = false;              // decoder self-attention: query i sees keys j <= i
  int node = -1;                    // index of the fused attention node in graph.nodes(); -1 when the
                                    // module is composed of simple ops (AttentionBackend::naive)
};

// How the attention modules of a graph compute (the experiment's train.attention_backend):
//   pillars  one fused attention node per module, run by our kernels (CPU or GPU)
//   cudnn    the same fused node, run by cuDNN's fused attention on the GPU (the reference backend)
//   naive    composed of simple ops (ops::attention_reference): Q Kᵀ, mask, softmax, dropout, · V,
//            materializing the (B, H, Tq, Tk) scores; slower, but every step is a plain op
enum class AttentionBackend : uint8_t { pillars, cudnn, naive };
constexpr auto enum_table(AttentionBackend) {
  return enum_words<AttentionBackend>(
      {{AttentionBackend::pillars, "pillars"}, {AttentionBackend::cudnn, "cudnn"}, {AttentionBackend::naive, "naive"}});
}

// How a model's graph is built, for the encoder-decoder and the language model alike: the loss,
// dropout, and what the GHT passes ask the attention modules to expose.
struct GraphOptions {
  float label_smoothing = 0.0f;
  uint64_t dropout_seed = 0; // every dropout of the graph draws from this Philox stream, at disjoint offsets
  bool train = true;         // false: no dropout ops at all
  // Feature-map requests from GHT passes (see AttentionSite):
  bool attention_probs = false; // attention nodes also output A
  bool target_lengths = false;  // declare an i32 (B) input "tgt_lengths" (decoder-side padding)
  AttentionBackend attention_backend = AttentionBackend::pillars;
};

struct Seq2SeqGraph {
  Graph graph;
  // Inputs (bind by these names): "src_tokens" i32 (B, Ts), "src_lengths" i32 (B),
  // "prev_output_tokens" i32 (B, Tt), "target" i32 (B·Tt); "tgt_lengths" i32 (B) only if requested.
  ValueId src_tokens = kNoValue, src_lengths = kNoValue, prev_output_tokens = kNoValue, target = kNoValue,
          tgt_lengths = kNoValue;
  ValueId encoder_out = kNoValue;       // (B, Ts, d)
  ValueId logits = kNoValue;            // (B·Tt, V) (rows of padded target positions are computed but meaningless);
                                        // not kept after a run unless graph.mark_output(logits) is called
  ValueId loss = kNoValue;              // scalar: label-smoothed cross-entropy, mean over non-pad targets
  std::vector<AttentionSite> attention; // every attention module, in graph order
  int64_t B = 0, Ts = 0, Tt = 0;
};

Seq2SeqGraph build_seq2seq_training_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts, int64_t Tt,
                                          const GraphOptions& options);
Seq2SeqGraph build_seq2seq_training_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts, int64_t Tt,
                                          float label_smoothing, uint64_t dropout_seed, bool train);

// The decoder-only language model: tokens (B, T) → logits (B·T, V) → cross-entropy against target
// (B·T), both right-padded with pad_id. Parameters as fairseq's transformer_lm names them
// ("decoder.embed_tokens.weight", "decoder.layers.0.self_attn.q_proj.weight", ...).
struct LmGraph {
  Graph graph;
  ValueId tokens = kNoValue, target = kNoValue; // inputs "tokens" i32 (B, T), "target" i32 (B·T)
  ValueId tgt_lengths = kNoValue;               // "tgt_lengths" i32 (B), only if requested
  ValueId logits = kNoValue, loss = kNoValue;
  std::vector<AttentionSite> attention;
  int64_t B = 0, T = 0;
};
LmGraph build_lm_training_graph(const TransformerConfig& cfg, int64_t B, int64_t T, const GraphOptions& options);

// fairseq's SinusoidalPositionalEmbedding rows for positions first, first+1, ..., first+T−1:
// (T, d) = [sin(p·f_0) … sin(p·f_{h−1}) | cos(p·f_0) … cos(p·f_{h−1})] (+ a zero column if d is
// odd), h = d/2, f_i = exp(−ln(10000)·i/(h−1)). Computed in double, stored as f32.
Tensor sinusoidal_positions(int64_t first, int64_t T, int64_t d);

} // namespace pillars
