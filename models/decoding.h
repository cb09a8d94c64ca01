// The graphs of incremental decoding, built from the same blocks as the training graph
// (models/blocks.h): an encoder graph, run once per batch of sources, and a decoder-step graph,
// run once per generated position. decode/step_decoder.h runs them; tests/test_decode.cpp checks
// that step after step they give the training graph's log-probabilities.
//
//   EncoderGraph eg = build_encoder_graph(cfg, B, Ts);        // src → every decoder layer's cross K, V
//   DecoderStepGraph sg = build_decoder_step_graph(cfg, shape); // one position per row
//
// THE CACHES. Keys and values live in tensors the caller owns and binds to the step graph's cache
// inputs; the graph updates them in place (engine/ops/decoding.h), so they persist from step to
// step. Per decoder layer l:
//   decoder.layers.l.self_attn.{k,v}_cache     (rows_before, capacity, H, Dh)   row n, slot t: position t
//   decoder.layers.l.encoder_attn.{k,v}_cache  (sentences_before, Ts, H, Dh)    the source, once per sentence
// A step first gathers the cache rows (row n continues row_origin[n]: the beam it extends; a
// sentence that finished drops out, its rows compacted away, so rows ≤ rows_before), then writes
// its keys and values at `positions`, then attends to slots [0, positions[n]].
//
// Inputs of a step graph (N = rows = sentences · rows_per_sentence):
//   tokens i32 (N, 1), positions i32 (N), self_lengths i32 (N) = positions + 1, row_origin i32 (N)
//   seq2seq: src_lengths i32 (B), sentence_origin i32 (B)
//   beam head (beam_candidates > 0): row_scores f32 (N), eos_rule i32 (N) (engine/ops/decoding.h)
// Outputs: log_probs (N, V), and with the beam head the candidates (B, n).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/ops/decoding.h"
#include "models/transformer.h"

namespace pillars {

struct EncoderGraph {
  Graph graph;
  ValueId src_tokens = kNoValue, src_lengths = kNoValue; // inputs "src_tokens" i32 (B, Ts), "src_lengths" i32 (B)
  // Per decoder layer, the keys and values of its cross-attention (B, Ts, H, Dh): graph outputs.
  std::vector<ValueId> cross_k, cross_v;
  int64_t B = 0, Ts = 0;
};
EncoderGraph build_encoder_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts);

struct DecoderStepShape {
  int64_t rows = 1;              // N: rows decoded this step
  int64_t rows_before = 1;       // rows of the self caches left by the previous step (≥ rows)
  int64_t rows_per_sentence = 1; // k (the beam); N = sentences · k
  int64_t sentences_before = 0;  // rows of the cross caches (seq2seq; ≥ N / k)
  int64_t source_len = 0;        // Ts (seq2seq)
  int64_t capacity = 1;          // time slots of the self caches: the longest target + 1
  int64_t beam_candidates = 0;   // n > 0: add beam_candidates keeping n per sentence
  int32_t pad = tokens::kPad, bos = tokens::kBos, eos = tokens::kEos;
  bool operator<(const DecoderStepShape& o) const; // (a map key: one compiled graph per shape)
};

struct DecoderStepGraph {
  Graph graph;
  ValueId tokens = kNoValue, positions = kNoValue, self_lengths = kNoValue, row_origin = kNoValue;
  ValueId src_lengths = kNoValue, sentence_origin = kNoValue; // seq2seq only
  ValueId row_scores = kNoValue, eos_rule = kNoValue;         // beam head only
  ValueId log_probs = kNoValue;                               // (N, V), an output
  ops::BeamCandidates candidates;                             // (B, n) each, outputs (beam head only)
  // The cache inputs in layer order (self k, self v [, cross k, cross v] per layer), by name.
  std::vector<std::string> cache_names;
  std::vector<ValueId> cache_leaves;
  DecoderStepShape shape;
};
DecoderStepGraph build_decoder_step_graph(const TransformerConfig& cfg, const DecoderStepShape& shape);

// The caches a step graph of `cfg` expects, by name, with their full shapes for `rows` rows,
// `sentences` sentences, `capacity` target slots and `source_len` source slots: what a decoder
// allocates once per batch (a step with fewer rows binds the first rows of each).
struct CacheSpec {
  std::string name;
  Shape shape;
  bool cross = false; // a cross-attention cache (rows are sentences)
};
std::vector<CacheSpec> decoder_caches(const TransformerConfig& cfg, int64_t rows, int64_t sentences, int64_t capacity,
                                      int64_t source_len);

} // namespace pillars
