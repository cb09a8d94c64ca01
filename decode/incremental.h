// Incremental decoding of the encoder-decoder transformer: the encoder once per batch, then the
// decoder one token at a time with cached keys and values (what beam search and greedy search run).
//
//   IncrementalDecoder dec(cfg, params);
//   EncoderOutput enc = dec.encode(src);                 // src: one token list per sentence (ending in eos)
//   DecoderState st = dec.start(enc, /*rows_per_sentence=*/beam, /*max_steps=*/max_len + 1);
//   for (t = 0; ...; ++t) {
//     dec.step(st, tokens /* (N) */, logprobs /* (N, V) */);   // log-softmax of the next-token logits
//     dec.reorder(st, origin /* (N): row n continues old row origin[n] */);
//   }
//
// The same network as models/transformer.cpp's training graph with train = false, computed directly
// with the CPU kernels: a decoding step has a query length of 1 and a key length that grows, which
// a static graph per shape would rebuild every step. tests/test_decode.cpp checks that the
// teacher-forced step-by-step log-probabilities equal the training graph's.
//
// Shapes (N = decoder rows = sentences × rows_per_sentence, Ts = longest source, d = model width,
// HD = heads · head width of the module, T = max_steps):
//   encoder output     (B, Ts, d)
//   cross keys/values  per decoder layer, (N, Ts, HD): computed once, each sentence's rows share them
//   self keys/values   per decoder layer, (N, T, HD): row n's step-t key is written at position t
#pragma once
#include <cstdint>
#include <vector>

#include "engine/params.h"
#include "models/transformer.h"

namespace pillars::decode {

struct EncoderOutput {
  int64_t B = 0, Ts = 0;
  std::vector<int32_t> lengths; // (B) source lengths (tokens, eos included)
  std::vector<float> out;       // (B, Ts, d)
};

struct DecoderState {
  int64_t N = 0, rows_per_sentence = 1, Ts = 0, T = 0, step = 0;
  std::vector<int32_t> src_lengths;                   // (N) per row: its sentence's source length
  std::vector<std::vector<float>> cross_k, cross_v;   // per layer (N, Ts, HD)
  std::vector<std::vector<float>> self_k, self_v;     // per layer (N, T, HD)
  std::vector<float> scratch;                         // reorder buffer
};

class IncrementalDecoder {
 public:
  // Keeps references to both: they must outlive the decoder. Reads parameters by their fairseq
  // names; a pruned model (cfg.module_heads) decodes with its fewer heads.
  IncrementalDecoder(const TransformerConfig& cfg, const ParamStore& params);

  const TransformerConfig& config() const { return cfg_; }
  // src[b]: token ids of sentence b, eos last. Runs the whole encoder on the right-padded batch.
  EncoderOutput encode(const std::vector<std::vector<int32_t>>& src) const;
  // Decoder rows for every sentence of `enc`: rows b·rows_per_sentence … (b+1)·rows_per_sentence − 1
  // belong to sentence b. `max_steps` bounds the number of step() calls.
  DecoderState start(const EncoderOutput& enc, int64_t rows_per_sentence, int64_t max_steps) const;
  // Feeds tokens (N) at position st.step; writes log p(next token) for every row: logprobs (N, V).
  void step(DecoderState& st, const int32_t* tokens, float* logprobs) const;
  // Row n continues the hypothesis of old row origin[n] (which must belong to the same sentence).
  void reorder(DecoderState& st, const std::vector<int32_t>& origin) const;

 private:
  struct Linear { const float* w = nullptr; const float* b = nullptr; int64_t out = 0, in = 0; };
  struct Norm { const float* w = nullptr; const float* b = nullptr; };
  struct Attention { Linear q, k, v, o; int64_t heads = 0; };
  struct EncoderLayer { Attention self_attn; Norm self_norm; Linear fc1, fc2; Norm final_norm; };
  struct DecoderLayer { Attention self_attn; Norm self_norm; Attention cross_attn; Norm cross_norm; Linear fc1, fc2; Norm final_norm; };

  Linear linear(const std::string& prefix) const;
  Norm norm(const std::string& prefix) const;
  Attention attention(const std::string& module) const;
  // x (rows, in) → y (rows, out) = x Wᵀ + b.
  static void apply(const Linear& l, const float* x, float* y, int64_t rows);
  void layer_norm(const Norm& n, float* x, int64_t rows) const; // in place
  void activation(float* x, int64_t n) const;                  // relu or gelu, in place

  const TransformerConfig& cfg_;
  const ParamStore& params_;
  const float* encoder_table_ = nullptr;  // (V, d)
  const float* decoder_table_ = nullptr;  // (V, d)
  const float* output_matrix_ = nullptr;  // (V, d)
  Tensor positions_;                      // (max positions, d): sinusoids of positions pad+1, pad+2, ...
  std::vector<EncoderLayer> encoder_;
  std::vector<DecoderLayer> decoder_;
  Norm encoder_final_, decoder_final_;    // pre-norm only
};

} // namespace pillars::decode
