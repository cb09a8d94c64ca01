// The head-diversity metrics (ght/xray.h, ght/head_metrics.h) and `pillars metrics`.
//
//  * Golden: tests/golden/ght/xray.json, written by tests/golden/ght/make_xray_golden.py: random
//    module tensors (seeded, rounded to f32, garbage in every padded position) and each metric
//    computed from its definition in float64 PyTorch on the gathered valid rows. Both sides work in
//    double on the same f32 inputs, so they agree to rounding: Approx epsilon 1e-9.
//  * Closed forms: the extremes of the normalized metrics (1 for rank-one heads with equal-magnitude
//    coordinates, −1 / +1 output dissimilarity for equal / opposite heads, 0 and (K−1)/K² variance).
//  * The whole model (the `tiny` config): measure_head_metrics reports xray() of the graph's own
//    tensors with the lengths and causal masks that belong to each module, and appending padding
//    to the batch changes no number (f32 forward passes of two shapes: epsilon 1e-5).
//  * JSON keys exactly as agreed, non-finite numbers as null; the CLI's exit codes, and (with
//    $PILLARS_DATA) its output equal to the in-process measurement of a trained run and to the
//    line the trainer logged into head_metrics.jsonl for the same update.
#include <doctest/doctest.h>

#include "skip.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "datasets/registry.h"
#include "base/error.h"
#include "engine/executor.h"
#include "ght/head_metrics.h"
#include "ght/xray.h"
#include "models/transformer.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "train/prepare.h"
#include "train/session.h"
#include "tests/test_env.h"

using namespace pillars;
using namespace pillars::ght;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using pillars::testing::pillars_binary;
using pillars::testing::random_sentences;
using pillars::testing::run_pillars;
using pillars::testing::RunResult;

// ---- golden file --------------------------------------------------------------------------------

json load_golden() {
  const std::string path = std::string(PILLARS_SOURCE_DIR) + "/tests/golden/ght/xray.json";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file ", path);
  return json::parse(in);
}

Tensor tensor_of(const json& values, const Shape& shape) {
  return Tensor::from(shape, values.get<std::vector<float>>());
}

ModuleTensors golden_tensors(const json& c) {
  const int64_t B = c["B"], Tq = c["Tq"], Tk = c["Tk"], H = c["H"], D = c["D"];
  ModuleTensors t;
  t.q = tensor_of(c["q"], {B, Tq, H, D});
  t.v = tensor_of(c["v"], {B, Tk, H, D});
  t.out = tensor_of(c["out"], {B, Tq, H, D});
  t.probs = tensor_of(c["probs"], {B, H, Tq, Tk});
  t.query_lengths = c["query_lengths"].get<std::vector<int32_t>>();
  t.key_lengths = c["key_lengths"].get<std::vector<int32_t>>();
  t.causal = c["causal"];
  return t;
}

// An H × H row-major matrix against [[...]], entry by entry.
void check_matrix(const std::vector<double>& got, const json& expected, int64_t H, double eps, const char* what) {
  REQUIRE(static_cast<int64_t>(got.size()) == H * H);
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      CAPTURE(what);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(got[static_cast<size_t>(i * H + j)] == doctest::Approx(expected[i][j].get<double>()).epsilon(eps));
    }
}

// The mean over pairs i < j of a golden [[...]] matrix.
double golden_pair_mean(const json& M) {
  const size_t H = M.size();
  double s = 0;
  for (size_t i = 0; i < H; ++i)
    for (size_t j = i + 1; j < H; ++j) s += M[i][j].get<double>();
  return s / static_cast<double>(H * (H - 1) / 2);
}

// ---- hand-made module tensors ------------------------------------------------------------------

// B = 1, T = Tq = Tk tokens, H heads of width D, no padding; every tensor zero to start with.
ModuleTensors blank(int64_t T, int64_t H, int64_t D) {
  ModuleTensors t;
  t.q = Tensor::zeros({1, T, H, D});
  t.v = Tensor::zeros({1, T, H, D});
  t.out = Tensor::zeros({1, T, H, D});
  t.probs = Tensor::zeros({1, H, T, T});
  t.query_lengths = {static_cast<int32_t>(T)};
  t.key_lengths = {static_cast<int32_t>(T)};
  return t;
}

float& at4(Tensor& x, int64_t a, int64_t b, int64_t c, int64_t d) {
  return x.data<float>()[((a * x.dim(1) + b) * x.dim(2) + c) * x.dim(3) + d];
}

// ---- the tiny model -------------------------------------------------------------------------

struct TinyModel {
  TransformerConfig cfg;
  ParamStore params;
  explicit TinyModel(int64_t heads = 2, bool decoder_only = false) {
    cfg = transformer_config("tiny");
    cfg.heads = heads;
    if (decoder_only) cfg.decoder_only = true, cfg.enc_layers = 0;
    init_transformer_params(cfg, params, 11);
  }
};

const std::vector<std::vector<int32_t>> kSrc = random_sentences({7, 3, 5}, 32, 1);
const std::vector<std::vector<int32_t>> kTgt = random_sentences({4, 6, 2}, 32, 2);

// The same sentences padded to (Ts, Tt).
steps::Seq2SeqBatch padded_batch(int64_t Ts, int64_t Tt) {
  steps::Batch b;
  b.indices = {0, 1, 2};
  b.Ts = Ts, b.Tt = Tt;
  return steps::make_seq2seq_batch(kSrc, kTgt, b, 1, 2);
}

// Every number of two measurements agrees (eps relative) and the labels are the same.
void check_same_metrics(const HeadMetrics& a, const HeadMetrics& b, double eps) {
  REQUIRE(a.modules.size() == b.modules.size());
  for (size_t m = 0; m < a.modules.size(); ++m) {
    const ModuleHeadMetrics &x = a.modules[m], &y = b.modules[m];
    CAPTURE(x.module);
    CHECK(x.module == y.module);
    CHECK(x.labels == y.labels);
    const auto same = [&](const std::vector<double>& u, const std::vector<double>& w, const char* what) {
      CAPTURE(what);
      REQUIRE(u.size() == w.size());
      for (size_t i = 0; i < u.size(); ++i) CHECK(u[i] == doctest::Approx(w[i]).epsilon(eps));
    };
    same(x.xray.orthogonality, y.xray.orthogonality, "orthogonality");
    same(x.xray.orthogonality_norm, y.xray.orthogonality_norm, "orthogonality_norm");
    same(x.xray.context_nonorth, y.xray.context_nonorth, "context_nonorth");
    same(x.xray.context_nonorth_norm, y.xray.context_nonorth_norm, "context_nonorth_norm");
    same(x.xray.output_dissimilarity, y.xray.output_dissimilarity, "output_dissimilarity");
    same(x.xray.attention_variance, y.xray.attention_variance, "attention_variance");
    same(x.similarity, y.similarity, "similarity");
    same({x.silhouette, x.silhouette_ght, x.homogenization, x.diversification},
         {y.silhouette, y.silhouette_ght, y.homogenization, y.diversification},
         "silhouette, silhouette_ght, homogenization, diversification");
    CHECK(std::isinf(x.dunn) == std::isinf(y.dunn));
    if (!std::isinf(x.dunn)) CHECK(x.dunn == doctest::Approx(y.dunn).epsilon(eps));
  }
}

// ---- the CLI ----------------------------------------------------------------------------------

// Two JSON documents are equal up to a relative tolerance on numbers (the same forward pass in
// two processes may split its threads differently).
void check_json_close(const json& got, const json& expected, const std::string& where) {
  CAPTURE(where);
  if (expected.is_number_float() || (expected.is_number() && got.is_number_float())) {
    REQUIRE(got.is_number());
    CHECK(got.get<double>() == doctest::Approx(expected.get<double>()).epsilon(1e-6));
  } else if (expected.is_array() || expected.is_object()) {
    REQUIRE(got.type() == expected.type());
    REQUIRE(got.size() == expected.size());
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      const std::string key = expected.is_object() ? it.key() : std::to_string(std::distance(expected.begin(), it));
      REQUIRE((expected.is_object() ? got.contains(key) : true));
      check_json_close(expected.is_object() ? got[key] : got[std::stoul(key)], it.value(), where + "/" + key);
    }
  } else {
    CHECK(got == expected);
  }
}

} // namespace

// ================================================================================================

TEST_CASE("xray: the four metrics, raw and normalized, match float64 PyTorch on the golden cases") {
  const json golden = load_golden();
  REQUIRE(golden.at("cases").size() == 3);
  for (const json& c : golden["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    const ModuleTensors t = golden_tensors(c);
    const json& e = c["expected"];
    const int64_t H = c["H"];
    const XrayMetrics m = xray(t);
    CHECK(m.heads == H);
    check_matrix(m.orthogonality, e["orthogonality"], H, 1e-9, "orthogonality");
    check_matrix(m.orthogonality_norm, e["orthogonality_norm"], H, 1e-9, "orthogonality_norm");
    check_matrix(m.context_nonorth, e["context_nonorth"], H, 1e-9, "context_nonorth");
    check_matrix(m.context_nonorth_norm, e["context_nonorth_norm"], H, 1e-9, "context_nonorth_norm");
    check_matrix(m.output_dissimilarity, e["output_dissimilarity"], H, 1e-9, "output_dissimilarity");
    const std::vector<double> variance = e["attention_variance"];
    REQUIRE(m.attention_variance.size() == variance.size());
    for (size_t h = 0; h < variance.size(); ++h)
      CHECK(m.attention_variance[h] == doctest::Approx(variance[h]).epsilon(1e-9));

    // The module's scalars: means over pairs i < j, and over heads for the variance.
    CHECK(m.orthogonality_mean == doctest::Approx(golden_pair_mean(e["orthogonality"])).epsilon(1e-9));
    CHECK(m.orthogonality_norm_mean == doctest::Approx(golden_pair_mean(e["orthogonality_norm"])).epsilon(1e-9));
    CHECK(m.context_nonorth_mean == doctest::Approx(golden_pair_mean(e["context_nonorth"])).epsilon(1e-9));
    CHECK(m.context_nonorth_norm_mean == doctest::Approx(golden_pair_mean(e["context_nonorth_norm"])).epsilon(1e-9));
    CHECK(m.output_dissimilarity_mean == doctest::Approx(golden_pair_mean(e["output_dissimilarity"])).epsilon(1e-9));
    double var_mean = 0;
    for (double v : variance) var_mean += v / static_cast<double>(variance.size());
    CHECK(m.attention_variance_mean == doctest::Approx(var_mean).epsilon(1e-9));
  }
}

TEST_CASE("xray: feature-map Gram matrices, cosines and GCT terms match float64 PyTorch on the golden cases") {
  const json golden = load_golden();
  for (const json& c : golden["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    const ModuleTensors t = golden_tensors(c);
    const json& e = c["expected"];
    const int64_t H = c["H"];
    const std::vector<int> labels = c["labels"];
    const int groups = c["groups"];
    for (FeatureMap f : {FeatureMap::V, FeatureMap::A, FeatureMap::O}) {
      const std::string name = enum_name(f);
      CAPTURE(name);
      const std::vector<double> G = feature_gram(t, f);
      check_matrix(G, e["gram"][name], H, 1e-9, "gram");
      check_matrix(cosine_from_gram(G, H), e["similarity"][name], H, 1e-9, "similarity");
      const GroupCosines gc = group_cosines(G, static_cast<int>(H), labels, groups);
      CHECK(gc.homogenization == doctest::Approx(e["homogenization"][name].get<double>()).epsilon(1e-9));
      CHECK(gc.diversification == doctest::Approx(e["diversification"][name].get<double>()).epsilon(1e-9));
    }
  }
}

TEST_CASE("xray: the normalized metrics reach their bounds on hand-made heads, and ignore the activation scale") {
  const int64_t T = 5, H = 3, D = 4;
  ModuleTensors t = blank(T, H, D);
  // Queries: every head, every token a multiple of (1, −1, 1, −1): rank one, equal magnitudes.
  // Outputs: head 1 = head 0, head 2 = −head 0 (all rank one too).
  for (int64_t n = 0; n < T; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const float sign = d % 2 == 0 ? 1.0f : -1.0f;
      for (int64_t h = 0; h < H; ++h)
        at4(t.q, 0, n, h, d) = static_cast<float>(n + 1) * static_cast<float>(h + 1) * sign;
      const float o = static_cast<float>(n + 2) * static_cast<float>(d + 1);
      at4(t.out, 0, n, 0, d) = o, at4(t.out, 0, n, 1, d) = o, at4(t.out, 0, n, 2, d) = -o;
    }
  // Attention: head 0 uniform over all keys, head 1 all on key 0, head 2 uniform too.
  for (int64_t r = 0; r < T; ++r)
    for (int64_t j = 0; j < T; ++j) {
      at4(t.probs, 0, 0, r, j) = 1.0f / T;
      at4(t.probs, 0, 1, r, j) = j == 0 ? 1.0f : 0.0f;
      at4(t.probs, 0, 2, r, j) = 1.0f / T;
    }
  const XrayMetrics m = xray(t);
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      CHECK(m.orthogonality_norm[static_cast<size_t>(i * H + j)] == doctest::Approx(1.0).epsilon(1e-12));
      CHECK(m.context_nonorth_norm[static_cast<size_t>(i * H + j)] == doctest::Approx(1.0).epsilon(1e-12));
    }
  CHECK(m.output_dissimilarity[0 * H + 1] == doctest::Approx(-1.0).epsilon(1e-12)); // equal heads
  CHECK(m.output_dissimilarity[0 * H + 2] == doctest::Approx(1.0).epsilon(1e-12));  // opposite heads
  CHECK(m.output_dissimilarity_mean == doctest::Approx((-1.0 + 1.0 + 1.0) / 3.0).epsilon(1e-12));
  CHECK(m.attention_variance[0] == doctest::Approx(0.0));
  CHECK(m.attention_variance[1] == doctest::Approx(static_cast<double>(T - 1) / (T * T)).epsilon(1e-7));
  // Raw (1): Σ|Q_iᵀQ_j| = Σ_n (n+1)²·(i+1)(j+1) · D² for these heads.
  const double sum_n2 = 1 + 4 + 9 + 16 + 25;
  CHECK(m.orthogonality[0 * H + 2] == doctest::Approx(sum_n2 * 3 * D * D).epsilon(1e-12));

  // Scaling every activation changes the raw forms by the square and the normalized ones not at all.
  ModuleTensors scaled = t;
  scaled.q = t.q.clone(), scaled.out = t.out.clone();
  for (Tensor* x : {&scaled.q, &scaled.out})
    for (int64_t i = 0; i < x->numel(); ++i) x->data<float>()[i] *= 4.0f;
  const XrayMetrics s = xray(scaled);
  CHECK(s.orthogonality_mean == doctest::Approx(16 * m.orthogonality_mean).epsilon(1e-12));
  CHECK(s.context_nonorth_mean == doctest::Approx(16 * m.context_nonorth_mean).epsilon(1e-12));
  CHECK(s.orthogonality_norm_mean == doctest::Approx(m.orthogonality_norm_mean).epsilon(1e-12));
  CHECK(s.context_nonorth_norm_mean == doctest::Approx(m.context_nonorth_norm_mean).epsilon(1e-12));
  CHECK(s.output_dissimilarity_mean == doctest::Approx(m.output_dissimilarity_mean).epsilon(1e-12));
}

TEST_CASE("xray: a causal module's variance counts only the keys each query sees, and bad shapes are errors") {
  // Two keys visible to query 1 and one to query 0: uniform attention over the visible keys has
  // variance 0 once the hidden keys are left out (it would not be 0 with them).
  ModuleTensors t = blank(2, 1, 1);
  t.causal = true;
  at4(t.probs, 0, 0, 0, 0) = 1.0f;
  at4(t.probs, 0, 0, 1, 0) = 0.5f, at4(t.probs, 0, 0, 1, 1) = 0.5f;
  at4(t.q, 0, 0, 0, 0) = 1.0f, at4(t.out, 0, 0, 0, 0) = 1.0f;
  const XrayMetrics m = xray(t);
  CHECK(m.attention_variance[0] == doctest::Approx(0.0));
  CHECK(std::isnan(m.orthogonality_mean)); // one head: no pairs

  ModuleTensors bad = blank(3, 2, 2);
  bad.key_lengths = {4};
  CHECK_THROWS_AS(xray(bad), Error);
  bad = blank(3, 2, 2);
  bad.probs = Tensor::zeros({1, 2, 3, 2});
  CHECK_THROWS_AS(xray(bad), Error);
  CHECK_THROWS_AS(parse_enum<FeatureMap>("Q", "--feature-map"), InputError);
  CHECK(parse_enum<FeatureMap>("A", "--feature-map") == FeatureMap::A);
}

TEST_CASE(
    "head metrics: the tiny model's numbers are xray of its own graph tensors, with each module's lengths and mask") {
  TinyModel model(/*heads=*/4);
  const steps::Seq2SeqBatch batch = held_out_batch(kSrc, kTgt, 3, 1, 2);
  CHECK(batch.B == 3);
  CHECK(batch.Ts == 7);
  CHECK(batch.Tt == 6);
  HeadMetricsOptions o;
  o.feature_map = FeatureMap::O, o.groups = 2, o.seed = 5;
  const HeadMetrics measured = measure_head_metrics(model.cfg, model.params, batch, o);
  REQUIRE(measured.modules.size() == 6);

  // The same graph built and run here; lengths taken from the sentences themselves.
  GraphOptions so;
  so.train = false, so.attention_probs = true, so.target_lengths = true;
  Seq2SeqGraph g = build_seq2seq_training_graph(model.cfg, batch.B, batch.Ts, batch.Tt, so);
  for (const AttentionSite& s : g.attention)
    for (ValueId v : {s.q, s.v, s.out, s.probs}) g.graph.mark_output(v);
  Executor ex(g.graph);
  ex.bind_params(model.params);
  const std::vector<int32_t> src_len = {7, 3, 5}, tgt_len = {4, 6, 2};
  ex.bind("src_tokens", Tensor::from_i32({batch.B, batch.Ts}, batch.src_tokens));
  ex.bind("src_lengths", Tensor::from_i32({batch.B}, src_len));
  ex.bind("prev_output_tokens", Tensor::from_i32({batch.B, batch.Tt}, batch.prev_output_tokens));
  ex.bind("target", Tensor::from_i32({batch.B * batch.Tt}, batch.target));
  ex.bind("tgt_lengths", Tensor::from_i32({batch.B}, tgt_len));
  ex.run();

  for (size_t i = 0; i < g.attention.size(); ++i) {
    const AttentionSite& s = g.attention[i];
    CAPTURE(s.module);
    const bool encoder = s.module.rfind("encoder.", 0) == 0, cross = s.module.find("encoder_attn") != std::string::npos;
    ModuleTensors t;
    t.q = ex.value(s.q), t.v = ex.value(s.v), t.out = ex.value(s.out), t.probs = ex.value(s.probs);
    t.query_lengths = encoder ? src_len : tgt_len;
    t.key_lengths = encoder || cross ? src_len : tgt_len;
    t.causal = !encoder && !cross;
    // The lengths and mask are the ones the probabilities obey: every valid row sums to 1 over
    // the keys it may see.
    for (int64_t b = 0; b < batch.B; ++b)
      for (int64_t h = 0; h < s.heads; ++h)
        for (int64_t r = 0; r < t.query_lengths[static_cast<size_t>(b)]; ++r) {
          const int64_t Tq = t.probs.dim(2), Tk = t.probs.dim(3);
          const float* row = t.probs.data<float>() + ((b * s.heads + h) * Tq + r) * Tk;
          const int64_t end = t.causal ? std::min<int64_t>(t.key_lengths[static_cast<size_t>(b)], r + 1)
                                       : t.key_lengths[static_cast<size_t>(b)];
          double sum = 0;
          for (int64_t j = 0; j < end; ++j) sum += row[j];
          CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
        }
    const ModuleHeadMetrics& got = measured.modules[i];
    CHECK(got.module == s.module);
    const ModuleHeadMetrics expected = measure_module(s.module, t, o);
    HeadMetrics a, b;
    a.modules = {got}, b.modules = {expected};
    check_same_metrics(a, b, 1e-12);
    const XrayMetrics x = xray(t);
    CHECK(got.xray.orthogonality_norm_mean == doctest::Approx(x.orthogonality_norm_mean).epsilon(1e-12));
    const std::vector<double> cos = cosine_from_gram(feature_gram(t, FeatureMap::O), s.heads);
    for (size_t k = 0; k < cos.size(); ++k) CHECK(got.similarity[k] == doctest::Approx(cos[k]).epsilon(1e-12));
    CHECK(got.labels.size() == 4);
  }
}

TEST_CASE("head metrics: appending padding to a translation batch changes no metric") {
  TinyModel model;
  for (FeatureMap f : {FeatureMap::V, FeatureMap::A, FeatureMap::O}) {
    CAPTURE(enum_name(f));
    HeadMetricsOptions o;
    o.feature_map = f;
    const HeadMetrics tight = measure_head_metrics(model.cfg, model.params, padded_batch(7, 6), o);
    const HeadMetrics loose = measure_head_metrics(model.cfg, model.params, padded_batch(12, 9), o);
    check_same_metrics(tight, loose, 1e-5);
  }
  TinyModel four(/*heads=*/4);
  HeadMetricsOptions o;
  o.groups = 3;
  check_same_metrics(measure_head_metrics(four.cfg, four.params, padded_batch(7, 6), o),
                     measure_head_metrics(four.cfg, four.params, padded_batch(16, 16), o), 1e-5);
}

TEST_CASE("head metrics: appending padding to a language model's blocks changes no metric") {
  TinyModel model(/*heads=*/4, /*decoder_only=*/true);
  std::vector<int32_t> stream = random_sentences({15}, 32, 3)[0]; // 14 predictions: blocks of 6, 6, 2
  const LmBatch tight = held_out_lm_batch(stream, 6, 10, 1);
  REQUIRE(tight.B == 3);
  REQUIRE(tight.T == 6);
  LmBatch loose;
  loose.B = 3, loose.T = 10;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t t = 0; t < 10; ++t) {
      loose.tokens.push_back(t < 6 ? tight.tokens[static_cast<size_t>(b * 6 + t)] : 1);
      loose.target.push_back(t < 6 ? tight.target[static_cast<size_t>(b * 6 + t)] : 1);
    }
  HeadMetricsOptions o;
  const HeadMetrics a = measure_head_metrics(model.cfg, model.params, tight, o);
  REQUIRE(a.modules.size() == 2);
  CHECK(a.modules[0].module == "decoder.layers.0.self_attn");
  check_same_metrics(a, measure_head_metrics(model.cfg, model.params, loose, o), 1e-5);
}

TEST_CASE("head metrics: JSON has exactly the agreed keys, non-finite numbers are null") {
  TinyModel model; // 2 heads, 2 groups: one head per group, so the Dunn index is +inf
  model.cfg.module_heads["decoder.layers.1.encoder_attn"] = 1; // a pruned module: no pairs
  ParamStore pruned;
  init_transformer_params(model.cfg, pruned, 3);
  HeadMetrics m = measure_head_metrics(model.cfg, pruned, padded_batch(7, 6), {});
  m.update = 120, m.epoch = 3;
  const json j = to_json(m);
  CHECK(j["type"] == "head_metrics");
  CHECK(j["update"] == 120);
  CHECK(j["epoch"] == 3);
  CHECK(j["feature_map"] == "V");
  CHECK(j["groups"] == 2);
  std::set<std::string> top;
  for (const auto& [k, v] : j.items()) top.insert(k);
  CHECK(top == std::set<std::string>{"type", "update", "epoch", "feature_map", "groups", "modules"});
  REQUIRE(j["modules"].size() == 6);
  const std::set<std::string> module_keys = {"module",
                                             "heads",
                                             "orthogonality",
                                             "orthogonality_norm",
                                             "context_nonorth",
                                             "context_nonorth_norm",
                                             "output_dissimilarity",
                                             "attention_variance",
                                             "attention_variance_mean",
                                             "similarity",
                                             "labels",
                                             "dunn",
                                             "silhouette",
                                             "silhouette_ght",
                                             "homogenization",
                                             "diversification",
                                             "pairs"};
  const std::set<std::string> pair_keys = {"orthogonality", "orthogonality_norm", "context_nonorth",
                                           "context_nonorth_norm", "output_dissimilarity"};
  for (const json& mod : j["modules"]) {
    CAPTURE(mod["module"].get<std::string>());
    std::set<std::string> keys, pairs;
    for (const auto& [k, v] : mod.items()) keys.insert(k);
    for (const auto& [k, v] : mod["pairs"].items()) pairs.insert(k);
    CHECK(keys == module_keys);
    CHECK(pairs == pair_keys);
    const size_t H = mod["heads"];
    CHECK(mod["attention_variance"].size() == H);
    CHECK(mod["labels"].size() == H);
    CHECK(mod["similarity"].size() == H);
    CHECK(mod["similarity"][0].size() == H);
    for (const std::string& k : pair_keys) CHECK(mod["pairs"][k].size() == H);
    if (H == 2) CHECK(mod["dunn"].is_null()); // two singleton groups
    if (H == 1) {
      CHECK(mod["module"] == "decoder.layers.1.encoder_attn");
      CHECK(mod["orthogonality"].is_null());
      CHECK(mod["labels"] == json::array({0}));
    }
  }
}

TEST_CASE("head metrics: the held-out batch is the first pairs or blocks, and an empty split is an input error") {
  const steps::Seq2SeqBatch two = held_out_batch(kSrc, kTgt, 2, 1, 2);
  CHECK(two.B == 2);
  CHECK(two.Ts == 7);
  CHECK(two.Tt == 6);
  CHECK(std::vector<int32_t>(two.src_tokens.begin(), two.src_tokens.begin() + 7) == kSrc[0]);
  CHECK(held_out_batch(kSrc, kTgt, 100, 1, 2).B == 3);
  steps::Seq2SeqData data;
  data.valid_src = kSrc, data.valid_tgt = kTgt;
  CHECK(held_out_batch(data, 3, 1, 2).src_tokens == held_out_batch(kSrc, kTgt, 3, 1, 2).src_tokens);
  CHECK_THROWS_AS(held_out_batch({}, {}, 4, 1, 2), InputError);

  const std::vector<int32_t> stream = {5, 6, 7, 8, 9, 10, 11, 12};
  const LmBatch lm = held_out_lm_batch(stream, 3, 2, 1);
  CHECK(lm.B == 2);
  CHECK(lm.tokens == std::vector<int32_t>{5, 6, 7, 8, 9, 10});
  CHECK(lm.target == std::vector<int32_t>{6, 7, 8, 9, 10, 11});
  CHECK_THROWS_AS(held_out_lm_batch({5}, 3, 2, 1), InputError);
}

TEST_CASE("metrics command: bad input exits with 2 and a message") {
  const std::string binary = pillars_binary();
  if (binary.empty()) {
    SKIP_TEST("the pillars binary is not built beside pillars_tests");
    return;
  }
  const RunResult missing = run_pillars(binary, {"metrics", "no/such/checkpoint.safetensors"});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no/such/checkpoint.safetensors") != std::string::npos);
  testing::ScratchDir empty("pillars_xray_");
  const RunResult not_a_run = run_pillars(binary, {"metrics", empty.path.string()});
  CHECK(not_a_run.code == 2);
  CHECK(not_a_run.err.find("config.json") != std::string::npos);
  const RunResult bad_map = run_pillars(binary, {"metrics", empty.path.string(), "--feature-map", "Q"});
  CHECK(bad_map.code == 2);
  CHECK(bad_map.err.find("--feature-map") != std::string::npos);
  const RunResult help = run_pillars(binary, {"metrics", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--sentences") != std::string::npos);
}

TEST_CASE(
    "metrics command: prints the in-process measurement of a trained run's checkpoint, as the trainer logged it") {
  const std::string binary = pillars_binary();
  if (binary.empty() || !testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("needs the pillars binary and PILLARS_DATA with multi30k-de-en");
    return;
  }
  testing::ScratchDir dir("pillars_xray_");
  const json spec = {
      {"task", "translation"},
      {"seed", 4},
      {"data",
       {{"dataset", "multi30k-de-en"},
        {"source", "de"},
        {"target", "en"},
        {"bpe_merges", 500},
        {"max_tokens", 512},
        {"train_fraction", 0.02}}},
      {"model", {{"config", "tiny"}, {"d_model", 32}, {"heads", 4}, {"ffn", 32}}},
      {"heads",
       {{"metrics", true}, {"metrics_every", 1}, {"metrics_sentences", 5}, {"feature_map", "A"}, {"groups", 3}}},
      {"train", {{"max_updates", 2}, {"valid_bleu", false}, {"log_every", 1000}}}};
  const Experiment e = parse_experiment(spec, "test_ght_xray.json");
  const std::string run = (dir.path / "run").string();
  train::SessionOptions so;
  so.run_dir = run, so.quiet = true, so.evaluate = false;
  train::run_experiment(e, so);

  // Every setting from the run (heads.metrics_sentences, feature_map, groups; seed).
  const RunResult r =
      run_pillars(binary, {"metrics", run, "--checkpoint", "last", "-o", (dir.path / "m.json").string()});
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const json printed = json::parse(pillars::testing::read_file(dir.path / "m.json"));
  CHECK(printed["update"] == 2);
  CHECK(printed["feature_map"] == "A");
  CHECK(printed["groups"] == 3);

  // In process: the trainer's own validation ids (train/prepare.h), the same checkpoint.
  const train::PreparedSeq2Seq p = train::prepare_seq2seq(e, run, false);
  train::LoadedCheckpoint ck = train::load_checkpoint(run + "/checkpoint_last.safetensors");
  HeadMetricsOptions o;
  o.feature_map = FeatureMap::A, o.groups = 3, o.seed = 4;
  HeadMetrics m = measure_head_metrics(ck.config, ck.params, held_out_batch(p.data, 5, 1, 2), o);
  m.update = ck.state.updates;
  m.epoch = printed["epoch"];
  check_json_close(printed, to_json(m), "");

  // The trainer's head_metrics.jsonl line of the same update says the same.
  std::ifstream log(run + "/head_metrics.jsonl");
  json logged;
  for (std::string line; std::getline(log, line);)
    if (json j = json::parse(line); j["update"] == printed["update"]) logged = j;
  REQUIRE_MESSAGE(!logged.is_null(), "no head_metrics.jsonl line for update ", printed["update"].dump());
  logged.erase("phase");
  check_json_close(printed, logged, "");

  // Options override the run's settings.
  const RunResult v = run_pillars(binary, {"metrics", run, "--checkpoint", "last", "--sentences", "3", "--feature-map",
                                           "V", "--groups", "2", "--seed", "7"});
  REQUIRE(v.code == 0);
  const json j = json::parse(v.out);
  CHECK(j["feature_map"] == "V");
  CHECK(j["groups"] == 2);
  o.feature_map = FeatureMap::V, o.groups = 2, o.seed = 7;
  m = measure_head_metrics(ck.config, ck.params, held_out_batch(p.data, 3, 1, 2), o);
  m.update = ck.state.updates, m.epoch = j["epoch"];
  check_json_close(j, to_json(m), "");
}

TEST_CASE("head metrics: keys that older files spell the British way read under their current names") {
  nlohmann::json module = {{"homogenisation", 0.25}}; // as older files wrote it; spelling: kept
  pillars::ght::read_legacy_keys(module);
  CHECK(module["homogenization"].get<double>() == 0.25);
  nlohmann::json line = {{"gct_homogenisation", 0.5}}; // spelling: kept
  pillars::ght::read_legacy_keys(line);
  CHECK(line["gct_homogenization"].get<double>() == 0.5);
  nlohmann::json both = {{"homogenisation", 0.25}, {"homogenization", 0.75}}; // spelling: kept
  pillars::ght::read_legacy_keys(both);
  CHECK(both["homogenization"].get<double>() == 0.75); // the current name wins
  nlohmann::json not_object = nlohmann::json::array();
  pillars::ght::read_legacy_keys(not_object);
  CHECK(not_object.empty());
}
