// The transformer's blocks, one function each: what models/transformer.cpp (the training graphs)
// and models/decoding.cpp (the encoder and decoder-step graphs of incremental decoding) are made
// of. One definition of the model: a block asks the Emitter whether it emits a whole sequence
// (training, scoring) or one decoding step, and only the attention modules and the positions
// differ between the two. Internal to models/ (the public API is transformer.h and decoding.h).
//
// Shapes: B batch (sentences), T sequence length, d model width, H heads of the module,
// Dh = d / heads head width, F FFN width, V vocabulary; in a decoding step N = B · rows per
// sentence rows, each one new position.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/ops.h"
#include "models/transformer.h"

namespace pillars::blocks {

// A key or value cache of a decoding step: an input leaf the caller binds to a tensor it owns.
struct CacheLeaf {
  std::string name; // "decoder.layers.0.self_attn.k_cache", ...
  ValueId leaf = kNoValue;
};

// What the layers of a decoder-step graph read besides their input (see models/decoding.h).
struct StepInputs {
  ValueId positions = kNoValue;       // i32 (N): position of this step's token = filled cache slots of the row
  ValueId self_lengths = kNoValue;    // i32 (N): positions + 1, the keys each query sees
  ValueId row_origin = kNoValue;      // i32 (N): the cache row each row continues
  ValueId sentence_origin = kNoValue; // i32 (B): the cross-attention cache row of each sentence
  ValueId src_lengths = kNoValue;     // i32 (B): source lengths (keys past them are padding)
  int64_t rows_before = 0;            // rows of the self caches as the previous step left them
  int64_t sentences_before = 0;       // rows of the cross caches as the previous step left them
  int64_t rows_per_sentence = 1;      // N / B
  int64_t capacity = 0;               // time slots of the self caches
  int64_t source_len = 0;             // time slots of the cross caches (Ts)
  std::vector<CacheLeaf> caches;      // the cache leaves, in the order the layers created them
};

// What every block needs: the graph being built, the config, the dropout stream, the attention
// sites it records, and (decoder steps only) the step's inputs.
struct Emitter {
  Graph& g;
  const TransformerConfig& cfg;
  const GraphOptions& opt;
  std::vector<AttentionSite>& sites;
  StepInputs* step = nullptr; // non-null: emit one decoding step, not a whole sequence
  uint64_t next_rng_offset = 0;

  // Each random op gets a disjoint range [offset, offset + n) of the one Philox stream
  // (kernels/philox.h), rounded up to a multiple of 4 so every range starts a fresh Philox block.
  uint64_t take_rng(int64_t n) {
    const uint64_t offset = next_rng_offset;
    next_rng_offset += (static_cast<uint64_t>(n) + 3) & ~uint64_t{3};
    return offset;
  }
};

// x (any shape) → same shape; the identity when not training or p = 0.
ValueId dropout(Emitter& e, ValueId x, float p);
// x (..., in) → (..., out): x Wᵀ + b with W = prefix.weight (out, in), b = prefix.bias (out).
ValueId linear(Emitter& e, ValueId x, const std::string& prefix, int64_t out, int64_t in);
// x (..., d) → (..., d): layer norm with prefix.weight (d), prefix.bias (d), eps 1e-5.
ValueId layer_norm(Emitter& e, ValueId x, const std::string& prefix);

// tokens i32 (B, T) → x (B, T, d) = dropout(√d · E[tokens] + P): P the sinusoids of the positions
// (0 … T−1 for a sequence; a step's rows at e.step->positions).
ValueId embed_block(Emitter& e, const std::string& table_name, ValueId tokens);

// A module's per-head projection: x (B, T, d) → (B, T, H, Dh), from module.<proj>.weight/bias.
ValueId head_projection(Emitter& e, const std::string& module, const std::string& proj, ValueId x);

// Multi-head attention over whole sequences: x_q (B, Tq, d), x_kv (B, Tk, d) → (B, Tq, d).
// `key_lengths` i32 (B) masks padded keys (kNoValue: none); `query_lengths` is only recorded for GHT.
ValueId attention_block(Emitter& e, const std::string& module, ValueId x_q, ValueId x_kv, bool causal,
                        ValueId key_lengths, ValueId query_lengths);

// fc2(act_drop(act(fc1(x)))): (B, T, d) → (B, T, d).
ValueId ffn_block(Emitter& e, const std::string& layer, ValueId x);

// A residual sub-layer around `f`, x (B, T, d) → (B, T, d):
//   post-norm  LN(x + dropout(f(x)))        pre-norm  x + dropout(f(LN(x)))
template <class Fn>
ValueId residual(Emitter& e, const std::string& norm, ValueId x, Fn f) {
  const ValueId in = e.cfg.pre_norm ? layer_norm(e, x, norm) : x;
  const ValueId y = ops::add(e.g, x, dropout(e, f(in), e.cfg.dropout));
  return e.cfg.pre_norm ? y : layer_norm(e, y, norm);
}

// src_tokens (B, Ts) → encoder output (B, Ts, d).
ValueId encoder(Emitter& e, ValueId src_tokens, ValueId src_lengths);
// prev_output_tokens (B, Tt), enc (B, Ts, d) or kNoValue → decoder output (B, Tt, d), before the
// vocabulary. In a step (e.step), tokens are (N, 1) and the cross-attention reads the caches.
ValueId decoder(Emitter& e, ValueId prev_tokens, ValueId enc, ValueId src_lengths, ValueId tgt_lengths);
// y (B, T, d) → logits (B·T, V) = y Eᵀ (E the output matrix: the decoder's table when tied).
ValueId output_logits(Emitter& e, ValueId y);

} // namespace pillars::blocks
