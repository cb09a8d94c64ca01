// What a transformer is: the sizes, the normalization, the dropouts, the embedding sharing and
// the heads each attention module keeps (models/transformer.h builds it; a checkpoint records it).
// Kept apart from the model code so that the readers of recorded configs (train/checkpoint_meta.h)
// and their fuzz target need nothing else.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "base/special_tokens.h"
#include "engine/ops/linear_act.h"

namespace pillars {

struct TransformerConfig {
  int64_t vocab = 0;   // joint source/target vocabulary (with pad, eos, ...)
  int64_t d_model = 0; // embedding / residual width d
  int64_t heads = 0;   // attention heads per module H (head width Dh = d / H)
  int64_t ffn = 0;     // feed-forward inner width
  int64_t enc_layers = 0, dec_layers = 0;
  bool pre_norm = false; // false: post-norm LN(x + f(x)) (the paper's); true: x + f(LN(x)) + final LNs
  ops::Activation activation = ops::Activation::relu; // or gelu (exact, erf)
  float dropout = 0.1f;                               // on embeddings and on every sub-layer output before the residual
  float attention_dropout = 0.0f;                     // on attention probabilities
  float activation_dropout = 0.0f;                    // after the FFN activation
  int64_t pad_id = tokens::kPad;                      // the dictionary's padding id (base/special_tokens.h)
  bool decoder_only = false;                    // a language model: no encoder, decoder layers without cross-attention
  bool share_all_embeddings = false;            // encoder and decoder use one token table
  bool share_decoder_input_output_embed = true; // logits = y · E_decᵀ
  // Attention modules with fewer heads than `heads` (after V2S pruning): module name
  // ("decoder.layers.2.encoder_attn") → kept heads. Dh stays d / heads; the module's projections
  // become (kept·Dh, d) and out_proj (d, kept·Dh).
  std::map<std::string, int64_t> module_heads;

  int64_t head_dim() const { return d_model / heads; }
  int64_t heads_of(const std::string& module) const;
  void validate() const; // throws InputError naming the bad field
};

} // namespace pillars
