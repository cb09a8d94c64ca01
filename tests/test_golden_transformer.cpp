// The transformer builder against an independent implementation (golden test), plus the model's
// bookkeeping: parameter names and counts, initialization, configs, dropout determinism.
//
// Golden file: tests/golden/transformer_1x1.json, written by tests/golden/make_transformer_golden.py
// (a 1+1-layer model written directly in float64 PyTorch, randomly initialized, dropout 0,
// label smoothing 0.1). We load its parameters, build our graph with its config, run forward and
// autodiff, and compare logits, loss and every parameter gradient.
//
// Tolerance: ours runs in f32, the reference in f64, so we allow f32 rounding accumulated over
// the model's depth: per tensor, max|ours − ref| ≤ 1e-5 · max|ref|. Two exceptions, both stated:
//   * logits of padded target positions are not compared: the loss ignores them, and fairseq
//     gives padded tokens a different position vector than we do (see embed_block), so those
//     rows legitimately differ. Only rows whose target is not pad are compared.
//   * the gradients of k_proj.bias are zero in exact arithmetic (softmax is invariant to adding
//     the same number to every score of a row, and q·b_k is such a number), so their reference is
//     pure rounding noise; for a tensor whose reference is that small, the bound is 1e-5 · the
//     largest reference gradient of the model instead.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/params.h"
#include "engine/passes/autodiff.h"
#include "runtime/cuda_device.h"
#include "models/init.h"
#include "models/transformer.h"
#include "train/checkpoint.h"

using namespace pillars;
using nlohmann::json;

namespace {

json load_golden() {
  const std::string path = std::string(PILLARS_SOURCE_DIR) + "/tests/golden/transformer_1x1.json";
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot open ", path);
  return json::parse(f);
}

TransformerConfig config_from_json(const json& j) {
  TransformerConfig c;
  c.vocab = j.at("vocab"), c.d_model = j.at("d_model"), c.heads = j.at("heads"), c.ffn = j.at("ffn");
  c.enc_layers = j.at("enc_layers"), c.dec_layers = j.at("dec_layers");
  c.pre_norm = j.at("pre_norm"),
  c.activation = parse_enum<ops::Activation>(j.at("activation").get<std::string>(), "activation");
  c.dropout = j.at("dropout"), c.attention_dropout = j.at("attention_dropout");
  c.activation_dropout = j.at("activation_dropout"), c.pad_id = j.at("pad_id");
  c.share_all_embeddings = j.at("share_all_embeddings");
  c.share_decoder_input_output_embed = j.at("share_decoder_input_output_embed");
  return c;
}

Tensor i32_tensor(const Shape& shape, const json& values) {
  return Tensor::from_i32(shape, values.get<std::vector<int32_t>>());
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// max |ours[i] − ref[i]| over the indices kept by `keep` (all when empty).
double max_abs_diff(const std::vector<float>& ours, const std::vector<double>& ref,
                    const std::vector<bool>& keep = {}) {
  double m = 0.0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (keep.empty() || keep[i]) m = std::max(m, std::abs(static_cast<double>(ours[i]) - ref[i]));
  return m;
}

void run_golden_case(const json& c, Device device = Device::cpu) {
  const std::string name = c.at("name");
  CAPTURE(name);
  const TransformerConfig cfg = config_from_json(c.at("config"));
  const int64_t B = c.at("batch").at("B"), Ts = c.at("batch").at("Ts"), Tt = c.at("batch").at("Tt");
  const float label_smoothing = c.at("label_smoothing");

  // Parameters: the reference's names and shapes must be exactly ours.
  ParamStore store;
  std::map<std::string, Shape> expected;
  for (const init::ParamSpec& s : transformer_parameters(cfg)) expected[s.name] = s.shape;
  for (const auto& [pname, p] : c.at("params").items()) {
    const Shape shape = p.at("shape").get<Shape>();
    REQUIRE_MESSAGE(expected.count(pname) == 1, "reference parameter ", pname, " unknown to our model");
    REQUIRE_MESSAGE(expected[pname] == shape, pname, ": reference shape ", shape_str(shape), ", ours ",
                    shape_str(expected[pname]));
    const std::vector<double> v = p.at("values").get<std::vector<double>>();
    Tensor& t = store.add(pname, shape);
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  }
  CHECK(store.size() == expected.size());

  // Forward graph, then the backward graph for every parameter.
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, label_smoothing, /*dropout_seed=*/0, /*train=*/false);
  m.graph.mark_output(m.logits); // read after the run (otherwise the gradient may reuse its buffer)
  const std::vector<ValueId> wrt = m.graph.params();
  const std::vector<ValueId> grads = autodiff(m.graph, m.loss, wrt);
  REQUIRE(grads.size() == wrt.size());
  CHECK(wrt.size() == store.size()); // the graph uses every parameter (the tied table once)

  Executor ex(m.graph, device);
  ex.bind_params(store); // host parameters: a GPU executor copies them to the device
  const json& in = c.at("inputs");
  ex.bind("src_tokens", i32_tensor({B, Ts}, in.at("src_tokens")));
  ex.bind("src_lengths", i32_tensor({B}, in.at("src_lengths")));
  ex.bind("prev_output_tokens", i32_tensor({B, Tt}, in.at("prev_output_tokens")));
  ex.bind("target", i32_tensor({B * Tt}, in.at("target")));
  ex.run();

  // Loss.
  const double ref_loss = c.at("loss");
  const double loss = ex.value(m.loss).to_vector().at(0);
  MESSAGE(name, ": loss ours ", loss, " reference ", ref_loss);
  CHECK(std::abs(loss - ref_loss) <= 1e-5 * std::abs(ref_loss));

  // Logits of the non-pad target rows.
  const std::vector<double> ref_logits = c.at("logits").at("values").get<std::vector<double>>();
  const std::vector<float> logits = ex.value(m.logits).to_vector();
  REQUIRE(logits.size() == ref_logits.size());
  const std::vector<int32_t> target = in.at("target").get<std::vector<int32_t>>();
  std::vector<bool> keep(ref_logits.size());
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = target[i / static_cast<size_t>(cfg.vocab)] != cfg.pad_id;
  double ref_scale = 0.0;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) ref_scale = std::max(ref_scale, std::abs(ref_logits[i]));
  const double logit_err = max_abs_diff(logits, ref_logits, keep);
  MESSAGE(name, ": logits max error ", logit_err, " (scale ", ref_scale, ")");
  CHECK(logit_err <= 1e-5 * ref_scale);

  // Every parameter gradient.
  const json& ref_grads = c.at("grads");
  double global_scale = 0.0;
  for (const auto& [gname, gj] : ref_grads.items())
    global_scale = std::max(global_scale, max_abs(gj.at("values").get<std::vector<double>>()));
  int failures = 0;
  double worst = 0.0; // the largest err / bound: how much of the tolerance the model uses
  std::string worst_name;
  for (size_t i = 0; i < wrt.size(); ++i) {
    const std::string pname = m.graph.producer(wrt[i]).name;
    CAPTURE(pname);
    REQUIRE(ref_grads.contains(pname));
    REQUIRE(grads[i] != kNoValue);
    const std::vector<double> ref = ref_grads.at(pname).at("values").get<std::vector<double>>();
    const std::vector<float> ours = ex.value(grads[i]).to_vector();
    REQUIRE(ours.size() == ref.size());
    const double scale = max_abs(ref);
    const bool zero_in_exact_arithmetic = scale < 1e-9 * global_scale; // k_proj.bias (see the top)
    const double bound = 1e-5 * (zero_in_exact_arithmetic ? global_scale : scale);
    const double err = max_abs_diff(ours, ref);
    if (err / bound > worst) worst = err / bound, worst_name = pname;
    if (err > bound) {
      ++failures;
      MESSAGE(name, ": gradient of ", pname, " max error ", err, " > bound ", bound, " (ref max ", scale, ")");
    }
    CHECK(err <= bound);
  }
  MESSAGE(name, ": ", wrt.size() - failures, "/", wrt.size(), " parameter gradients within bounds; worst ", worst_name,
          " at ", worst, " of its bound");
}

} // namespace

TEST_CASE("golden: transformer 1+1 forward and gradients match float64 PyTorch") {
  const json golden = load_golden();
  REQUIRE(golden.at("cases").size() >= 1);
  for (const json& c : golden.at("cases")) {
    SUBCASE(c.at("name").get<std::string>().c_str()) { run_golden_case(c); }
  }
}

// The same cases on the GPU, in fp32 mode, against the same float64 reference and bounds.
TEST_CASE("golden: transformer 1+1 on the GPU matches float64 PyTorch") {
  if (pillars::testing::no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  const json golden = load_golden();
  for (const json& c : golden.at("cases")) {
    SUBCASE(c.at("name").get<std::string>().c_str()) { run_golden_case(c, Device::cuda); }
  }
}

// ---- model bookkeeping ---------------------------------------------------------------------------

TEST_CASE("model: base parameter count matches the paper's 44.0M without embeddings") {
  TransformerConfig cfg = transformer_config("base");
  cfg.vocab = 8; // embeddings are excluded from the count; a small table keeps the test light
  ParamStore store;
  init_transformer_params(cfg, store, 1);

  // Per encoder layer: attention 4·d² + 4·d, FFN 2·d·F + F + d, two layer norms 2·2·d.
  // Per decoder layer: two attentions, FFN, three layer norms.
  const int64_t d = 512, F = 2048;
  const int64_t attention = 4 * d * d + 4 * d, ffn = 2 * d * F + F + d, norm = 2 * d;
  const int64_t exact = 6 * (attention + ffn + 2 * norm) + 6 * (2 * attention + ffn + 3 * norm);
  CHECK(exact == 44'138'496);
  CHECK(count_parameters(store, /*include_embeddings=*/false) == exact);
  CHECK(count_parameters(store, /*include_embeddings=*/true) == exact + 2 * 8 * d); // encoder + decoder tables
  // The paper's 44.0M counts weight matrices only (biases and layer norms add 0.1M more):
  const int64_t matrices = count_parameters(store, false, /*matrices_only=*/true);
  CHECK(matrices == 6 * (4 * d * d + 2 * d * F) + 6 * (8 * d * d + 2 * d * F));
  CHECK(matrices == 44'040'192);
  CHECK(std::abs(static_cast<double>(matrices) - 44.0e6) <= 0.05e6);

  // GHT-PS: keeping 2 of 8 heads in all 18 attention modules gives the paper's 29.9M (−32.1%).
  TransformerConfig pruned = cfg;
  for (int64_t i = 0; i < 6; ++i) {
    pruned.module_heads["encoder.layers." + std::to_string(i) + ".self_attn"] = 2;
    pruned.module_heads["decoder.layers." + std::to_string(i) + ".self_attn"] = 2;
    pruned.module_heads["decoder.layers." + std::to_string(i) + ".encoder_attn"] = 2;
  }
  ParamStore small;
  init_transformer_params(pruned, small, 1);
  const int64_t pruned_matrices = count_parameters(small, false, true);
  CHECK(pruned_matrices == 29'884'416);
  CHECK(std::abs(static_cast<double>(pruned_matrices) - 29.9e6) <= 0.05e6);
  const double reduction = 1.0 - static_cast<double>(pruned_matrices) / static_cast<double>(matrices);
  CHECK(std::round(1000.0 * reduction) == 321.0); // 32.1%
  CHECK(small.get("decoder.layers.3.encoder_attn.q_proj.weight").shape() == Shape{128, 512});
  CHECK(small.get("decoder.layers.3.encoder_attn.out_proj.weight").shape() == Shape{512, 128});
}

TEST_CASE("model: Transformer-Lite1 and Lite2 are about 30M without embeddings") {
  for (const char* name : {"lite1", "lite2"}) {
    CAPTURE(name);
    TransformerConfig cfg = transformer_config(name);
    cfg.vocab = 8;
    ParamStore store;
    init_transformer_params(cfg, store, 1);
    const double n = static_cast<double>(count_parameters(store, false));
    CHECK(n > 29.0e6);
    CHECK(n < 31.0e6);
  }
}

TEST_CASE("model: named configs validate, bad configs are rejected with the field named") {
  for (const std::string& name : transformer_config_names()) {
    CAPTURE(name);
    CHECK_NOTHROW(transformer_config(name).validate());
  }
  CHECK_THROWS_AS(transformer_config("huge"), InputError);
  TransformerConfig c = transformer_config("tiny");
  c.heads = 3; // 16 is not a multiple of 3
  CHECK_THROWS_AS(c.validate(), InputError);
  // An activation is an enum from the moment it is read: a checkpoint naming another one is refused.
  nlohmann::json j = train::to_json(transformer_config("tiny"));
  j["activation"] = "swish";
  CHECK_THROWS_WITH_AS(train::transformer_config_from_json(j, "ckpt.json"), doctest::Contains("swish"), InputError);
  c = transformer_config("tiny");
  c.pad_id = c.vocab;
  CHECK_THROWS_AS(c.validate(), InputError);
}

TEST_CASE("model: the graph uses exactly the initialized parameters, with the same shapes") {
  std::vector<TransformerConfig> variants;
  TransformerConfig c = transformer_config("tiny");
  variants.push_back(c);
  c.pre_norm = true, c.activation = ops::Activation::gelu;
  variants.push_back(c);
  c.share_all_embeddings = true;
  variants.push_back(c);
  c = transformer_config("tiny");
  c.share_decoder_input_output_embed = false; // an untied output projection
  c.module_heads["decoder.layers.1.encoder_attn"] = 1;
  variants.push_back(c);
  for (const TransformerConfig& cfg : variants) {
    std::map<std::string, Shape> specs;
    for (const init::ParamSpec& s : transformer_parameters(cfg)) specs[s.name] = s.shape;
    const Seq2SeqGraph m = build_seq2seq_training_graph(cfg, 2, 5, 4, 0.1f, 1, true);
    std::set<std::string> used;
    for (ValueId p : m.graph.params()) {
      const std::string name = m.graph.producer(p).name;
      CAPTURE(name);
      REQUIRE(specs.count(name) == 1);
      CHECK(specs[name] == m.graph.shape(p));
      used.insert(name);
    }
    CHECK(used.size() == specs.size());
    CHECK(m.attention.size() == static_cast<size_t>(cfg.enc_layers + 2 * cfg.dec_layers));
    CHECK(m.graph.shape(m.logits) == Shape{2 * 4, cfg.vocab});
    CHECK(m.graph.shape(m.loss) == Shape{});
  }
  const Seq2SeqGraph m = build_seq2seq_training_graph(transformer_config("tiny"), 2, 5, 4, 0.1f, 1, true);
  const AttentionSite& cross = m.attention.back();
  CHECK(cross.module == "decoder.layers.1.encoder_attn");
  CHECK(m.graph.shape(cross.v) == Shape{2, 5, 2, 8});   // (B, Ts, H, Dh)
  CHECK(m.graph.shape(cross.out) == Shape{2, 4, 2, 8}); // (B, Tt, H, Dh)
  CHECK(cross.key_lengths == m.src_lengths);
  CHECK(cross.probs == kNoValue);
}

TEST_CASE("model: initialization is deterministic and follows fairseq's scheme") {
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore a, b, c;
  init_transformer_params(cfg, a, 42);
  init_transformer_params(cfg, b, 42);
  init_transformer_params(cfg, c, 43);
  REQUIRE(a.names() == b.names());
  for (const std::string& name : a.names()) {
    CAPTURE(name);
    CHECK(a.get(name).to_vector() == b.get(name).to_vector());
  }
  CHECK(a.get("encoder.layers.0.fc1.weight").to_vector() != c.get("encoder.layers.0.fc1.weight").to_vector());

  // Embedding: pad row zero, others N(0, 1/d).
  const std::vector<float> table = a.get("encoder.embed_tokens.weight").to_vector();
  const int64_t d = cfg.d_model;
  for (int64_t j = 0; j < d; ++j) CHECK(table[static_cast<size_t>(cfg.pad_id * d + j)] == 0.0f);
  // q_proj: xavier_uniform with gain 1/√2 → |w| ≤ √(6/(2d))/√2; out_proj gain 1.
  const double q_bound = std::sqrt(6.0 / (2.0 * d)) / std::sqrt(2.0);
  for (float w : a.get("decoder.layers.1.self_attn.q_proj.weight").to_vector()) CHECK(std::abs(w) <= q_bound);
  for (float w : a.get("decoder.layers.1.self_attn.q_proj.bias").to_vector()) CHECK(w == 0.0f);
  for (float w : a.get("encoder.layers.0.final_layer_norm.weight").to_vector()) CHECK(w == 1.0f);

  // The generator's statistics on a large draw: mean 0, variance 1.
  init::SplitMix64 rng(7);
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    sum += z, sum2 += z * z;
  }
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(std::abs(sum2 / n - 1.0) < 0.02);
}

TEST_CASE("model: sinusoidal positions are fairseq's") {
  // fairseq's table for d = 6 (half = 3, f = 1, 10^-2, 10^-4), row p = [sin p·f | cos p·f].
  const Tensor t = sinusoidal_positions(2, 3, 6); // positions 2, 3, 4
  const std::vector<float> v = t.to_vector();
  const double f[3] = {1.0, 1e-2, 1e-4};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 3; ++i) {
      CHECK(v[static_cast<size_t>(r * 6 + i)] == doctest::Approx(std::sin((r + 2) * f[i])).epsilon(1e-6));
      CHECK(v[static_cast<size_t>(r * 6 + 3 + i)] == doctest::Approx(std::cos((r + 2) * f[i])).epsilon(1e-6));
    }
}

TEST_CASE("model: a tiny training graph with dropout is deterministic for a seed") {
  const TransformerConfig cfg = transformer_config("tiny"); // dropout, attention and activation dropout 0.1
  ParamStore store;
  init_transformer_params(cfg, store, 3);
  const int64_t B = 2, Ts = 6, Tt = 5;
  std::vector<int32_t> src(B * Ts), prev(B * Tt), target(B * Tt);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int32_t>(2 + (7 * i + 3) % (cfg.vocab - 2));
  for (size_t i = 0; i < prev.size(); ++i) {
    prev[i] = static_cast<int32_t>(2 + (5 * i + 1) % (cfg.vocab - 2));
    target[i] = static_cast<int32_t>(2 + (11 * i + 4) % (cfg.vocab - 2));
  }
  src[B * Ts - 1] = static_cast<int32_t>(cfg.pad_id); // second sentence: length Ts − 1
  prev[B * Tt - 1] = target[B * Tt - 1] = static_cast<int32_t>(cfg.pad_id);

  auto run = [&](uint64_t seed, bool train) {
    Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, 0.1f, seed, train);
    m.graph.mark_output(m.logits);
    const std::vector<ValueId> grads = autodiff(m.graph, m.loss, m.graph.params());
    Executor ex(m.graph);
    ex.bind_params(store);
    ex.bind("src_tokens", Tensor::from_i32({B, Ts}, src));
    ex.bind("src_lengths", Tensor::from_i32({B}, {static_cast<int32_t>(Ts), static_cast<int32_t>(Ts - 1)}));
    ex.bind("prev_output_tokens", Tensor::from_i32({B, Tt}, prev));
    ex.bind("target", Tensor::from_i32({B * Tt}, target));
    ex.run();
    std::vector<float> out = ex.value(m.logits).to_vector();
    out.push_back(ex.value(m.loss).to_vector().at(0));
    for (ValueId gv : grads) {
      const std::vector<float> gvals = ex.value(gv).to_vector();
      out.insert(out.end(), gvals.begin(), gvals.end());
    }
    return out;
  };
  const std::vector<float> first = run(7, true), again = run(7, true), other = run(8, true), eval = run(7, false);
  CHECK(first == again); // bitwise: same seed, same masks, same numbers
  CHECK(first != other); // another seed draws other masks
  CHECK(first != eval);  // and dropout really is on in training
  for (float x : first) REQUIRE(std::isfinite(x));
}

TEST_CASE("model: GHT feature-map requests (probabilities, tgt_lengths) change no real output") {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0.0f;
  ParamStore store;
  init_transformer_params(cfg, store, 5);
  const int64_t B = 2, Ts = 4, Tt = 3;
  const std::vector<int32_t> src = {4, 5, 6, 7, 8, 9, 1, 1}, prev = {2, 10, 11, 2, 12, 1},
                             target = {10, 11, 2, 12, 2, 1};
  auto run = [&](bool requests) {
    GraphOptions o;
    o.label_smoothing = 0.1f, o.train = false;
    o.attention_probs = o.target_lengths = requests;
    Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, o);
    m.graph.mark_output(m.logits);
    if (requests) {
      REQUIRE(m.tgt_lengths != kNoValue);
      for (const AttentionSite& s : m.attention) {
        CAPTURE(s.module);
        REQUIRE(s.probs != kNoValue);
        const int64_t Tq = m.graph.shape(s.q)[1], Tk = m.graph.shape(s.k)[1];
        CHECK(m.graph.shape(s.probs) == Shape{B, s.heads, Tq, Tk});
        m.graph.mark_output(s.probs);
      }
    }
    Executor ex(m.graph);
    ex.bind_params(store);
    ex.bind("src_tokens", Tensor::from_i32({B, Ts}, src));
    ex.bind("src_lengths", Tensor::from_i32({B}, {4, 2}));
    ex.bind("prev_output_tokens", Tensor::from_i32({B, Tt}, prev));
    ex.bind("target", Tensor::from_i32({B * Tt}, target));
    if (requests) ex.bind("tgt_lengths", Tensor::from_i32({B}, {3, 2}));
    ex.run();
    std::vector<float> out = ex.value(m.logits).to_vector();
    out.resize(static_cast<size_t>((B * Tt - 1) * cfg.vocab)); // drop the one padded target row
    out.push_back(ex.value(m.loss).to_vector().at(0));
    if (requests) { // a probability row of a real query sums to 1 and gives padded source keys 0
      const std::vector<float> a = ex.value(m.attention.back().probs).to_vector(); // (B, H, Tt, Ts)
      const size_t row = static_cast<size_t>(((1 * cfg.heads + 0) * Tt + 0) * Ts); // b 1, head 0, query 0
      CHECK(a[row] + a[row + 1] == doctest::Approx(1.0f).epsilon(1e-5));
      CHECK(a[row + 2] == 0.0f);
      CHECK(a[row + 3] == 0.0f);
    }
    return out;
  };
  const std::vector<float> plain = run(false), requested = run(true);
  REQUIRE(plain.size() == requested.size());
  for (size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == doctest::Approx(requested[i]).epsilon(1e-6));
}
