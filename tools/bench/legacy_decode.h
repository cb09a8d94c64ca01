// The decoder that decode/step_decoder.h replaced, kept ONLY so that `pillars bench decode` can
// compare the two in the same run (see bench_decode.h). It is the transformer written a second
// time, as direct calls into kernels/cpu, with its own parameter names and its own beam search:
// what the one-model design removed. Delete it once the comparison is recorded in
// docs/PERFORMANCE.md.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/params.h"
#include "decode/search.h"
#include "models/transformer.h"

namespace pillars::bench::legacy {

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

// The old beam search over the IncrementalDecoder (no compaction, bookkeeping on the host).
std::vector<std::vector<decode::Hypothesis>> beam_search(const IncrementalDecoder& decoder,
                                                         const std::vector<std::vector<int32_t>>& sources,
                                                         const decode::SearchOptions& options);

} // namespace pillars::bench::legacy
