// The encoder-decoder transformer: configs, parameters, and the training-graph builders. See
// transformer.h. The graph is assembled from the blocks of models/blocks.h (whose top comment draws
// it), the same blocks the decoding graphs of models/decoding.h are made of.
#include "models/transformer.h"

#include <cmath>

#include "base/error.h"
#include "engine/ops.h"
#include "models/blocks.h"

namespace pillars {

// ---- configuration ------------------------------------------------------------------------------

namespace {

// The paper's base model (fairseq `transformer`, IWSLT'14 recipe: dropout 0.3; 10k joint BPE):
// every named config starts from it and changes what the table below says.
TransformerConfig base_config() {
  TransformerConfig c;
  c.vocab = 10000, c.d_model = 512, c.heads = 8, c.ffn = 2048, c.enc_layers = 6, c.dec_layers = 6;
  c.dropout = 0.3f, c.attention_dropout = 0.0f, c.activation_dropout = 0.0f;
  return c;
}

// The named configs, in the order `pillars schema` and the messages list them.
const std::vector<std::pair<std::string, TransformerConfig>>& named_configs() {
  static const std::vector<std::pair<std::string, TransformerConfig>> table = [] {
    std::vector<std::pair<std::string, TransformerConfig>> t;
    auto add = [&](const char* name, auto change) {
      TransformerConfig c = base_config();
      change(c);
      t.emplace_back(name, c);
    };
    add("tiny", [](TransformerConfig& c) { // every code path, including all three dropouts, at toy size
      c.vocab = 32, c.d_model = 16, c.heads = 2, c.ffn = 32, c.enc_layers = 2, c.dec_layers = 2;
      c.dropout = c.attention_dropout = c.activation_dropout = 0.1f;
    });
    add("small", [](TransformerConfig& c) { // the CPU default: Multi30k-sized translation in minutes on two cores
      c.d_model = 256, c.ffn = 1024, c.enc_layers = 3, c.dec_layers = 3, c.heads = 4, c.dropout = 0.1f;
    });
    add("bench", [](TransformerConfig& c) {
      c.d_model = 256, c.ffn = 1024, c.enc_layers = 3, c.dec_layers = 3, c.dropout = 0.1f;
    });
    add("base", [](TransformerConfig&) {});
    add("lite1", [](TransformerConfig& c) { c.enc_layers = 4, c.dec_layers = 4; }); // Transformer-Lite1: fewer layers
    add("lite2", [](TransformerConfig& c) { c.d_model = 424, c.ffn = 1696; }); // Transformer-Lite2: narrower (Dh = 53)
    add("lm-small", [](TransformerConfig& c) {
      c.decoder_only = true, c.enc_layers = 0;
      c.d_model = 256, c.ffn = 1024, c.heads = 4, c.dec_layers = 4, c.dropout = 0.1f;
    });
    add("lm-wt103", [](TransformerConfig& c) {
      c.decoder_only = true, c.enc_layers = 0;
      c.d_model = 1024, c.ffn = 4096, c.heads = 16, c.dec_layers = 16, c.pre_norm = true;
      c.dropout = 0.3f, c.attention_dropout = 0.1f, c.activation_dropout = 0.1f;
    });
    return t;
  }();
  return table;
}

} // namespace

TransformerConfig transformer_config(const std::string& name) {
  for (const auto& [n, c] : named_configs())
    if (n == name) return c;
  std::string known;
  for (const std::string& n : transformer_config_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError(str_cat("unknown transformer config \"", name, "\" (known: ", known, ")"));
}

std::vector<std::string> transformer_config_names() {
  std::vector<std::string> names;
  for (const auto& [n, c] : named_configs()) names.push_back(n);
  return names;
}

// ---- parameters ---------------------------------------------------------------------------------

namespace {

const char* kEncoderTable = "encoder.embed_tokens.weight";
const char* kDecoderTable = "decoder.embed_tokens.weight";
const char* kOutputProjection = "decoder.output_projection.weight";

bool ties_output(const TransformerConfig& c) { return c.share_decoder_input_output_embed || c.share_all_embeddings; }
// share_all_embeddings: one table, stored under the encoder's name, serves both stacks.
std::string decoder_table(const TransformerConfig& c) {
  return c.share_all_embeddings && !c.decoder_only ? kEncoderTable : kDecoderTable;
}
std::string output_matrix(const TransformerConfig& c) { return ties_output(c) ? decoder_table(c) : kOutputProjection; }

} // namespace

std::string encoder_embedding_name(const TransformerConfig&) { return kEncoderTable; }
std::string decoder_embedding_name(const TransformerConfig& c) { return decoder_table(c); }
std::string output_projection_name(const TransformerConfig& c) { return output_matrix(c); }

// fairseq's initialization (fairseq/models/transformer, fairseq/modules/multihead_attention.py):
//   token tables             N(0, d^-1/2 std), pad row 0         (Embedding())
//   q/k/v_proj.weight        xavier_uniform, gain 1/√2           (MultiheadAttention, qkv_same_dim)
//   out_proj, fc1, fc2       xavier_uniform, gain 1              (the transformer's Linear())
//   untied output projection N(0, d^-1/2 std)
//   every bias               0;   layer norms: weight 1, bias 0
// (Recent fairseq leaves fc1/fc2 and the q/k/v biases at PyTorch's nn.Linear default,
// U(±1/√fan_in); the xavier/zero choice above is fairseq's original Linear() helper.)
std::vector<init::ParamSpec> transformer_parameters(const TransformerConfig& cfg) {
  cfg.validate();
  using init::Init;
  const int64_t d = cfg.d_model, F = cfg.ffn, V = cfg.vocab, Dh = cfg.head_dim();
  std::vector<init::ParamSpec> specs;
  auto table = [&](const std::string& name, int64_t padding_row) {
    specs.push_back({name, {V, d}, Init::embedding, 1.0, padding_row});
  };
  auto linear = [&](const std::string& prefix, int64_t out, int64_t in, double gain) {
    specs.push_back({prefix + ".weight", {out, in}, Init::xavier_uniform, gain});
    specs.push_back({prefix + ".bias", {out}, Init::zeros});
  };
  auto norm = [&](const std::string& prefix) {
    specs.push_back({prefix + ".weight", {d}, Init::ones});
    specs.push_back({prefix + ".bias", {d}, Init::zeros});
  };
  auto attention = [&](const std::string& module) {
    const int64_t HD = cfg.heads_of(module) * Dh;
    const double qkv_gain = 1.0 / std::sqrt(2.0);
    linear(module + ".q_proj", HD, d, qkv_gain);
    linear(module + ".k_proj", HD, d, qkv_gain);
    linear(module + ".v_proj", HD, d, qkv_gain);
    linear(module + ".out_proj", d, HD, 1.0);
  };
  auto ffn = [&](const std::string& layer) {
    linear(layer + ".fc1", F, d, 1.0);
    linear(layer + ".fc2", d, F, 1.0);
  };

  if (!cfg.decoder_only) table(kEncoderTable, cfg.pad_id);
  for (int64_t i = 0; i < cfg.enc_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    norm(p + ".self_attn_layer_norm");
    ffn(p);
    norm(p + ".final_layer_norm");
  }
  if (cfg.pre_norm && !cfg.decoder_only) norm("encoder.layer_norm");

  if (!cfg.share_all_embeddings || cfg.decoder_only) table(kDecoderTable, cfg.pad_id);
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    norm(p + ".self_attn_layer_norm");
    if (!cfg.decoder_only) {
      attention(p + ".encoder_attn");
      norm(p + ".encoder_attn_layer_norm");
    }
    ffn(p);
    norm(p + ".final_layer_norm");
  }
  if (cfg.pre_norm) norm("decoder.layer_norm");
  if (!ties_output(cfg)) specs.push_back({kOutputProjection, {V, d}, Init::embedding, 1.0, -1});
  return specs;
}

std::vector<std::string> attention_modules(const TransformerConfig& cfg) {
  std::vector<std::string> modules;
  for (int64_t i = 0; i < cfg.enc_layers && !cfg.decoder_only; ++i)
    modules.push_back("encoder.layers." + std::to_string(i) + ".self_attn");
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    modules.push_back("decoder.layers." + std::to_string(i) + ".self_attn");
    if (!cfg.decoder_only) modules.push_back("decoder.layers." + std::to_string(i) + ".encoder_attn");
  }
  return modules;
}

void init_transformer_params(const TransformerConfig& cfg, ParamStore& store, uint64_t seed) {
  init::init_parameters(transformer_parameters(cfg), store, seed);
}

int64_t count_parameters(const ParamStore& store, bool include_embeddings, bool matrices_only) {
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  int64_t total = 0;
  for (const std::string& name : store.names()) {
    const Tensor& t = store.get(name);
    const bool embedding = ends_with(name, "embed_tokens.weight") || ends_with(name, "output_projection.weight");
    if (embedding && !include_embeddings) continue;
    if (matrices_only && t.rank() < 2) continue;
    total += t.numel();
  }
  return total;
}

Tensor sinusoidal_positions(int64_t first, int64_t T, int64_t d) {
  PILLARS_CHECK(d >= 4, "sinusoidal_positions: d = ", d, " too small");
  const int64_t half = d / 2;
  const double step = std::log(10000.0) / static_cast<double>(half - 1);
  Tensor table = Tensor::zeros({T, d}); // an odd d leaves the last column 0, as fairseq does
  float* p = table.data<float>();
  for (int64_t t = 0; t < T; ++t) {
    const double pos = static_cast<double>(first + t);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * std::exp(-step * static_cast<double>(i));
      p[t * d + i] = static_cast<float>(std::sin(angle));
      p[t * d + half + i] = static_cast<float>(std::cos(angle));
    }
  }
  return table;
}

Seq2SeqGraph build_seq2seq_training_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts, int64_t Tt,
                                          const GraphOptions& options) {
  cfg.validate();
  PILLARS_CHECK(!cfg.decoder_only,
                "build_seq2seq_training_graph: the config is decoder-only (use build_lm_training_graph)");
  PILLARS_CHECK(B > 0 && Ts > 0 && Tt > 0, "build_seq2seq_training_graph: bad batch shape B=", B, " Ts=", Ts,
                " Tt=", Tt);
  Seq2SeqGraph m;
  m.B = B, m.Ts = Ts, m.Tt = Tt;
  Graph& g = m.graph;
  m.src_tokens = g.input("src_tokens", {B, Ts}, DType::i32);
  m.src_lengths = g.input("src_lengths", {B}, DType::i32);
  m.prev_output_tokens = g.input("prev_output_tokens", {B, Tt}, DType::i32);
  m.target = g.input("target", {B * Tt}, DType::i32);
  if (options.target_lengths) m.tgt_lengths = g.input("tgt_lengths", {B}, DType::i32);

  blocks::Emitter e{g, cfg, options, m.attention};
  m.encoder_out = blocks::encoder(e, m.src_tokens, m.src_lengths);                                         // (B, Ts, d)
  const ValueId y = blocks::decoder(e, m.prev_output_tokens, m.encoder_out, m.src_lengths, m.tgt_lengths); // (B, Tt, d)
  m.logits = blocks::output_logits(e, y);                                                                  // (B·Tt, V)
  m.loss = ops::cross_entropy(g, m.logits, m.target, options.label_smoothing, cfg.pad_id);                 // scalar
  // Only the loss is kept after a run by default: the logits are the largest activation of a
  // step, and the cross-entropy gradient is written over them. Mark them to read them afterwards.
  g.mark_output(m.loss);
  return m;
}

LmGraph build_lm_training_graph(const TransformerConfig& cfg, int64_t B, int64_t T, const GraphOptions& options) {
  cfg.validate();
  PILLARS_CHECK(cfg.decoder_only, "build_lm_training_graph: the config is not decoder-only");
  PILLARS_CHECK(B > 0 && T > 0, "build_lm_training_graph: bad batch shape B=", B, " T=", T);
  LmGraph m;
  m.B = B, m.T = T;
  Graph& g = m.graph;
  m.tokens = g.input("tokens", {B, T}, DType::i32);
  m.target = g.input("target", {B * T}, DType::i32);
  if (options.target_lengths) m.tgt_lengths = g.input("tgt_lengths", {B}, DType::i32);
  blocks::Emitter e{g, cfg, options, m.attention};
  // Causal self-attention alone keeps right padding out of every real position's view
  // (tgt_lengths, when declared, masks padded keys too: it changes no real row and tells GHT
  // which positions are real).
  const ValueId y = blocks::decoder(e, m.tokens, kNoValue, kNoValue, m.tgt_lengths);       // (B, T, d)
  m.logits = blocks::output_logits(e, y);                                                  // (B·T, V)
  m.loss = ops::cross_entropy(g, m.logits, m.target, options.label_smoothing, cfg.pad_id); // scalar
  g.mark_output(m.loss);
  return m;
}

Seq2SeqGraph build_seq2seq_training_graph(const TransformerConfig& cfg, int64_t B, int64_t Ts, int64_t Tt,
                                          float label_smoothing, uint64_t dropout_seed, bool train) {
  GraphOptions o;
  o.label_smoothing = label_smoothing;
  o.dropout_seed = dropout_seed;
  o.train = train;
  return build_seq2seq_training_graph(cfg, B, Ts, Tt, o);
}

} // namespace pillars
