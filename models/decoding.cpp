// The encoder and decoder-step graphs (see decoding.h), from the blocks of models/blocks.h.
#include "models/decoding.h"

#include <tuple>

#include "base/error.h"
#include "models/blocks.h"

namespace pillars {

namespace {

GraphOptions inference() {
  GraphOptions o;
  o.train = false;
  return o;
}

} // namespace

bool DecoderStepShape::operator<(const DecoderStepShape& o) const {
  auto key = [](const DecoderStepShape& s) {
    return std::tie(s.rows, s.rows_before, s.rows_per_sentence, s.sentences_before, s.source_len, s.capacity,
                    s.beam_candidates, s.pad, s.bos, s.eos);
  };
  return key(*this) < key(o);
}

EncoderGraph build_encoder_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts) {
  cfg.validate();
  PILLARS_CHECK(!cfg.decoder_only, "build_encoder_graph: a decoder-only model has no encoder");
  PILLARS_CHECK(B > 0 && Ts > 0, "build_encoder_graph: bad batch shape B=", B, " Ts=", Ts);
  EncoderGraph m;
  m.B = B, m.Ts = Ts;
  Graph& g = m.graph;
  m.src_tokens = g.input("src_tokens", {B, Ts}, DType::i32);
  m.src_lengths = g.input("src_lengths", {B}, DType::i32);
  const GraphOptions o = inference();
  std::vector<AttentionSite> sites;
  blocks::Emitter e{g, cfg, o, sites};
  const ValueId enc = blocks::encoder(e, m.src_tokens, m.src_lengths); // (B, Ts, d)
  for (int64_t l = 0; l < cfg.dec_layers; ++l) {
    const std::string module = "decoder.layers." + std::to_string(l) + ".encoder_attn";
    m.cross_k.push_back(blocks::head_projection(e, module, "k_proj", enc)); // (B, Ts, H, Dh)
    m.cross_v.push_back(blocks::head_projection(e, module, "v_proj", enc));
    g.mark_output(m.cross_k.back());
    g.mark_output(m.cross_v.back());
  }
  return m;
}

DecoderStepGraph build_decoder_step_graph(const TransformerConfig& cfg, const DecoderStepShape& shape) {
  cfg.validate();
  const DecoderStepShape& s = shape;
  const int64_t N = s.rows, k = s.rows_per_sentence;
  PILLARS_CHECK(N >= 1 && k >= 1 && N % k == 0 && s.rows_before >= N && s.capacity >= 1,
                "build_decoder_step_graph: bad shape: rows ", N, ", rows before ", s.rows_before,
                ", rows per sentence ", k, ", capacity ", s.capacity);
  const int64_t B = N / k;
  PILLARS_CHECK(cfg.decoder_only || (s.sentences_before >= B && s.source_len >= 1), "build_decoder_step_graph: ", B,
                " sentences need cross caches of at least as many rows (got ", s.sentences_before,
                ") and a source length (got ", s.source_len, ")");
  DecoderStepGraph m;
  m.shape = s;
  Graph& g = m.graph;
  m.tokens = g.input("tokens", {N, 1}, DType::i32);
  m.positions = g.input("positions", {N}, DType::i32);
  m.self_lengths = g.input("self_lengths", {N}, DType::i32);
  m.row_origin = g.input("row_origin", {N}, DType::i32);
  blocks::StepInputs in;
  in.positions = m.positions, in.self_lengths = m.self_lengths, in.row_origin = m.row_origin;
  in.rows_before = s.rows_before, in.rows_per_sentence = k, in.capacity = s.capacity;
  if (!cfg.decoder_only) {
    m.src_lengths = g.input("src_lengths", {B}, DType::i32);
    m.sentence_origin = g.input("sentence_origin", {B}, DType::i32);
    in.src_lengths = m.src_lengths, in.sentence_origin = m.sentence_origin;
    in.sentences_before = s.sentences_before, in.source_len = s.source_len;
  }
  const GraphOptions o = inference();
  std::vector<AttentionSite> sites;
  blocks::Emitter e{g, cfg, o, sites, &in};
  const ValueId y = blocks::decoder(e, m.tokens, kNoValue, m.src_lengths, kNoValue); // (N, 1, d)
  m.log_probs = ops::log_softmax(g, blocks::output_logits(e, y));                    // (N, V)
  g.mark_output(m.log_probs);
  if (s.beam_candidates > 0) {
    m.row_scores = g.input("row_scores", {N}, DType::f32);
    m.eos_rule = g.input("eos_rule", {N}, DType::i32);
    m.candidates =
        ops::beam_candidates(g, m.log_probs, m.row_scores, m.eos_rule,
                             {.beam = k, .candidates = s.beam_candidates, .pad = s.pad, .bos = s.bos, .eos = s.eos});
    g.mark_output(m.candidates.scores);
    g.mark_output(m.candidates.index);
  }
  for (const blocks::CacheLeaf& c : in.caches) {
    m.cache_names.push_back(c.name);
    m.cache_leaves.push_back(c.leaf);
  }
  return m;
}

std::vector<CacheSpec> decoder_caches(const TransformerConfig& cfg, int64_t rows, int64_t sentences, int64_t capacity,
                                      int64_t source_len) {
  std::vector<CacheSpec> caches;
  const int64_t Dh = cfg.head_dim();
  for (int64_t l = 0; l < cfg.dec_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l);
    const int64_t H = cfg.heads_of(p + ".self_attn");
    caches.push_back({p + ".self_attn.k_cache", {rows, capacity, H, Dh}, false});
    caches.push_back({p + ".self_attn.v_cache", {rows, capacity, H, Dh}, false});
    if (cfg.decoder_only) continue;
    const int64_t Hc = cfg.heads_of(p + ".encoder_attn");
    caches.push_back({p + ".encoder_attn.k_cache", {sentences, source_len, Hc, Dh}, true});
    caches.push_back({p + ".encoder_attn.v_cache", {sentences, source_len, Hc, Dh}, true});
  }
  return caches;
}

} // namespace pillars
