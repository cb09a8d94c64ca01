// The transformer's blocks (see blocks.h). Post-norm shown; pre-norm moves each LN to the block's
// input and adds a final LN after each stack.
//
//   src_tokens (B, Ts) ─ embed_block ─ x (B, Ts, d)
//     encoder_layer × enc_layers:  x = LN(x + drop(attention_block(x, x, src_lengths)))
//                                  x = LN(x + drop(ffn_block(x)))
//   prev_output_tokens (B, Tt) ─ embed_block ─ y (B, Tt, d)
//     decoder_layer × dec_layers:  y = LN(y + drop(self_attention(y)))           causal
//                                  y = LN(y + drop(cross_attention(y, enc)))     src_lengths
//                                  y = LN(y + drop(ffn_block(y)))
//   logits (B·Tt, V) = y · Eᵀ
//
// A decoding step is the same decoder on (N, 1) tokens. Its two attention modules differ:
//   self-attention   the row's new key and value are written into its cache at its position
//                    (after the cache's rows follow the beams the last step chose), and the one
//                    query attends to the cache's first position + 1 slots: causal by construction;
//                    in bf16 the cache holds bf16 values, rounded once as written (kv_rounded);
//   cross-attention  the source's keys and values were computed once (models/decoding.h's encoder
//                    graph) and sit in a cache of one row per sentence; the k rows of a sentence
//                    attend to it together, as k queries of one batch entry.
#include "models/blocks.h"

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "base/error.h"
#include "engine/ops/decoding.h"

namespace pillars::blocks {

ValueId dropout(Emitter& e, ValueId x, float p) {
  if (!e.opt.train || p <= 0.0f) return x;
  return ops::dropout(e.g, x, p, e.opt.dropout_seed, e.take_rng(numel(e.g.shape(x))));
}

ValueId linear(Emitter& e, ValueId x, const std::string& prefix, int64_t out, int64_t in) {
  const ValueId w = e.g.param(prefix + ".weight", {out, in});
  const ValueId b = e.g.param(prefix + ".bias", {out});
  return ops::linear(e.g, x, w, b);
}

ValueId layer_norm(Emitter& e, ValueId x, const std::string& prefix) {
  const int64_t d = e.cfg.d_model;
  return ops::layer_norm(e.g, x, e.g.param(prefix + ".weight", {d}), e.g.param(prefix + ".bias", {d}), 1e-5f);
}

namespace {

// The sinusoids of positions pad+1 … pad+T (T, d), made once per (pad, T, d): a decoder step graph
// is built for every live-row count, and computing 2·T·d sines each time would cost more than the
// graph itself.
Tensor position_table(int64_t first, int64_t T, int64_t d) {
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, int64_t>, Tensor> made;
  const std::lock_guard<std::mutex> lock(mutex);
  Tensor& t = made[{first, T, d}];
  if (!t.defined()) t = sinusoidal_positions(first, T, d);
  return t;
}

} // namespace

// (fairseq gives pad tokens position `pad`, a zero row; we give every row its index. Only the rows
// of pad tokens differ, and those never reach a non-pad output: they are masked as keys and their
// targets are ignored.)
ValueId embed_block(Emitter& e, const std::string& table_name, ValueId tokens) {
  const int64_t V = e.cfg.vocab, d = e.cfg.d_model, B = e.g.shape(tokens)[0], T = e.g.shape(tokens)[1];
  const ValueId table = e.g.param(table_name, {V, d}); // (V, d)
  const ValueId x = ops::scale(e.g, ops::embedding(e.g, table, tokens),
                               static_cast<float>(std::sqrt(static_cast<double>(d)))); // (B, T, d)
  ValueId pos;
  if (e.step) { // row n's position positions[n]: one row of the table each       (N, 1, d)
    const ValueId all = e.g.constant(position_table(e.cfg.pad_id + 1, e.step->capacity, d));
    pos = ops::reshape(e.g, ops::embedding(e.g, all, e.step->positions), {B, 1, d});
  } else {
    pos = e.g.constant(position_table(e.cfg.pad_id + 1, T, d)); // (T, d)
  }
  return dropout(e, ops::add(e.g, x, pos), e.cfg.dropout); // (B, T, d)
}

ValueId head_projection(Emitter& e, const std::string& module, const std::string& proj, ValueId x) {
  const int64_t d = e.cfg.d_model, H = e.cfg.heads_of(module), Dh = e.cfg.head_dim();
  const Shape s = e.g.shape(x);
  return ops::reshape(e.g, linear(e, x, module + "." + proj, H * Dh, d), {s[0], s[1], H, Dh}); // (B, T, H, Dh)
}

namespace {

// The heads and the output projection, from per-head q (B, Tq, H, Dh), k, v (B, Tk, H, Dh) to
// (B, Tq, d): O = dropout(softmax(q kᵀ / √Dh + masks)) v per (batch, head), then out_proj.
// fairseq multiplies q by Dh^-1/2 before the product; the fused op scales the scores instead: the
// same function. Records the module's AttentionSite. kv_rounded: k and v are caches cache_write
// filled (ops::AttentionOptions::kv_rounded).
ValueId attend(Emitter& e, const std::string& module, ValueId q, ValueId k, ValueId v, bool causal, ValueId key_lengths,
               ValueId query_lengths, bool kv_rounded = false) {
  Graph& g = e.g;
  const int64_t d = e.cfg.d_model, H = e.cfg.heads_of(module), Dh = e.cfg.head_dim(), HD = H * Dh;
  const int64_t B = g.shape(q)[0], Tq = g.shape(q)[1], Tk = g.shape(k)[1];
  ops::AttentionOptions a;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  a.causal = causal;
  a.key_lengths = key_lengths;
  a.kv_rounded = kv_rounded;
  if (e.opt.train && e.cfg.attention_dropout > 0.0f) {
    a.dropout = e.cfg.attention_dropout;
    a.seed = e.opt.dropout_seed;
    a.rng_offset = e.take_rng(B * H * Tq * Tk); // one number per probability
  }
  ops::AttentionResult r; // out (B, Tq, H, Dh)
  if (e.opt.attention_backend == AttentionBackend::naive) {
    r.out = ops::attention_reference(g, q, k, v, a, e.opt.attention_probs ? &r.probs : nullptr);
  } else {
    a.emit_probs = e.opt.attention_probs;
    a.kernel = e.opt.attention_backend == AttentionBackend::cudnn ? ops::AttentionKernel::cudnn
                                                                  : ops::AttentionKernel::pillars;
    r = ops::attention(g, q, k, v, a);
  }

  // GHT hook: record this module's per-head feature maps (see AttentionSite in transformer.h).
  AttentionSite site;
  site.module = module;
  site.heads = H, site.head_dim = Dh;
  site.q = q, site.k = k, site.v = v, site.out = r.out, site.probs = r.probs;
  site.query_lengths = query_lengths, site.key_lengths = key_lengths;
  site.causal = causal;
  if (e.opt.attention_backend != AttentionBackend::naive) site.node = g.value(r.out).producer;
  e.sites.push_back(std::move(site));

  // (A method may gate the heads here, ξ_h·O_h: the head_gates pass of steps/head_gates.h.)
  const ValueId o = ops::reshape(g, r.out, {B, Tq, HD}); // (B, Tq, H·Dh)
  return linear(e, o, module + ".out_proj", d, HD);      // (B, Tq, d)
}

// A cache leaf of the step graph, (rows, slots, H, Dh), recorded in e.step->caches.
ValueId cache_leaf(Emitter& e, const std::string& name, int64_t rows, int64_t slots, int64_t H) {
  const ValueId leaf = e.g.input(name, {rows, slots, H, e.cfg.head_dim()});
  e.step->caches.push_back({name, leaf});
  return leaf;
}

// Decoder self-attention, y (B, T, d) → (B, T, d). Whole sequences: causal; with right padding
// that alone keeps padded target positions out of every real position's view, so it needs no key
// mask (tgt_lengths, when declared, is passed as one anyway: it changes no real row and tells GHT
// which positions are real). A step: the caches, as the file's top comment says.
ValueId self_attention(Emitter& e, const std::string& module, ValueId h, ValueId tgt_lengths) {
  if (!e.step) return attention_block(e, module, h, h, /*causal=*/true, tgt_lengths, tgt_lengths);
  StepInputs& s = *e.step;
  const int64_t H = e.cfg.heads_of(module);
  const ValueId q = head_projection(e, module, "q_proj", h); // (N, 1, H, Dh)
  auto cached = [&](const char* cache, const char* proj) {   // (N, T, H, Dh)
    const ValueId old =
        ops::cache_gather(e.g, cache_leaf(e, module + cache, s.rows_before, s.capacity, H), s.row_origin, s.positions);
    return ops::cache_write(e.g, old, head_projection(e, module, proj, h), s.positions);
  };
  const ValueId k = cached(".k_cache", "k_proj"), v = cached(".v_cache", "v_proj");
  // Every slot of k and v was stored by cache_write (at this step or an earlier one), rounded to
  // bf16 when the CPU runs bf16: the attention need not round the (N, T, H, Dh) caches again.
  return attend(e, module, q, k, v, /*causal=*/false, s.self_lengths, kNoValue, /*kv_rounded=*/true);
}

// Decoder cross-attention, y (B, Tt, d) over enc (B, Ts, d), padded source keys masked. A step:
// the k rows of each sentence, (N, 1, d) = (B·k, 1, d), attend to its cached source keys as k
// queries: (B, k, d).
ValueId cross_attention(Emitter& e, const std::string& module, ValueId h, ValueId enc, ValueId src_lengths,
                        ValueId tgt_lengths) {
  if (!e.step) return attention_block(e, module, h, enc, /*causal=*/false, src_lengths, tgt_lengths);
  StepInputs& s = *e.step;
  const int64_t H = e.cfg.heads_of(module), N = e.g.shape(h)[0], k = s.rows_per_sentence, B = N / k;
  const ValueId q = ops::reshape(e.g, head_projection(e, module, "q_proj", h), {B, k, H, e.cfg.head_dim()});
  auto cached = [&](const char* cache) { // (B, Ts, H, Dh)
    return ops::cache_gather(e.g, cache_leaf(e, module + cache, s.sentences_before, s.source_len, H),
                             s.sentence_origin);
  };
  const ValueId kc = cached(".k_cache"), vc = cached(".v_cache");
  const ValueId out = attend(e, module, q, kc, vc, /*causal=*/false, s.src_lengths, kNoValue); // (B, k, d)
  return ops::reshape(e.g, out, {N, 1, e.cfg.d_model});
}

// Encoder layer i: x (B, Ts, d) → (B, Ts, d). Self-attention over the non-pad source positions.
ValueId encoder_layer(Emitter& e, int64_t i, ValueId x, ValueId src_lengths) {
  const std::string p = "encoder.layers." + std::to_string(i);
  x = residual(e, p + ".self_attn_layer_norm", x, [&](ValueId h) {
    return attention_block(e, p + ".self_attn", h, h, /*causal=*/false, src_lengths, src_lengths);
  });
  return residual(e, p + ".final_layer_norm", x, [&](ValueId h) { return ffn_block(e, p, h); });
}

// Decoder layer i: y (B, Tt, d), enc (B, Ts, d) → (B, Tt, d). A decoder-only language model has
// no cross-attention.
ValueId decoder_layer(Emitter& e, int64_t i, ValueId y, ValueId enc, ValueId src_lengths, ValueId tgt_lengths) {
  const std::string p = "decoder.layers." + std::to_string(i);
  y = residual(e, p + ".self_attn_layer_norm", y,
               [&](ValueId h) { return self_attention(e, p + ".self_attn", h, tgt_lengths); });
  if (!e.cfg.decoder_only)
    y = residual(e, p + ".encoder_attn_layer_norm", y,
                 [&](ValueId h) { return cross_attention(e, p + ".encoder_attn", h, enc, src_lengths, tgt_lengths); });
  return residual(e, p + ".final_layer_norm", y, [&](ValueId h) { return ffn_block(e, p, h); });
}

} // namespace

ValueId attention_block(Emitter& e, const std::string& module, ValueId x_q, ValueId x_kv, bool causal,
                        ValueId key_lengths, ValueId query_lengths) {
  const ValueId q = head_projection(e, module, "q_proj", x_q);  // (B, Tq, H, Dh)
  const ValueId k = head_projection(e, module, "k_proj", x_kv); // (B, Tk, H, Dh)
  const ValueId v = head_projection(e, module, "v_proj", x_kv); // (B, Tk, H, Dh)
  return attend(e, module, q, k, v, causal, key_lengths, query_lengths);
}

ValueId ffn_block(Emitter& e, const std::string& layer, ValueId x) {
  const int64_t d = e.cfg.d_model, F = e.cfg.ffn;
  ValueId h = linear(e, x, layer + ".fc1", F, d);                                        // (B, T, F)
  h = e.cfg.activation == ops::Activation::gelu ? ops::gelu(e.g, h) : ops::relu(e.g, h); // (B, T, F)
  h = dropout(e, h, e.cfg.activation_dropout);                                           // (B, T, F)
  return linear(e, h, layer + ".fc2", d, F);                                             // (B, T, d)
}

ValueId encoder(Emitter& e, ValueId src_tokens, ValueId src_lengths) {
  ValueId x = embed_block(e, encoder_embedding_name(e.cfg), src_tokens);
  for (int64_t i = 0; i < e.cfg.enc_layers; ++i) x = encoder_layer(e, i, x, src_lengths);
  return e.cfg.pre_norm ? layer_norm(e, x, "encoder.layer_norm") : x;
}

ValueId decoder(Emitter& e, ValueId prev_tokens, ValueId enc, ValueId src_lengths, ValueId tgt_lengths) {
  ValueId y = embed_block(e, decoder_embedding_name(e.cfg), prev_tokens);
  for (int64_t i = 0; i < e.cfg.dec_layers; ++i) y = decoder_layer(e, i, y, enc, src_lengths, tgt_lengths);
  return e.cfg.pre_norm ? layer_norm(e, y, "decoder.layer_norm") : y;
}

// The output projection is a linear layer without bias whose weight (V, d) is the decoder's token
// table when tied (graph.param returns the same value for the same name; autodiff sums both
// gradients).
ValueId output_logits(Emitter& e, ValueId y) {
  const Shape s = e.g.shape(y);
  const ValueId rows = ops::reshape(e.g, y, {s[0] * s[1], e.cfg.d_model});                               // (B·T, d)
  return ops::linear(e.g, rows, e.g.param(output_projection_name(e.cfg), {e.cfg.vocab, e.cfg.d_model})); // (B·T, V)
}

} // namespace pillars::blocks
