// Incremental decoding (the encoder and decoder-step graphs of models/decoding.h, run by
// decode::StepDecoder) and beam search, against the training graph (the same blocks, but whole
// sequences at once: no caches, no gathers) and against exhaustive search.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "decode/step_decoder.h"
#include "decode/search.h"
#include "engine/executor.h"
#include "engine/ops/decoding.h"
#include "runtime/cuda_device.h"
#include "models/transformer.h"
#include "train/evaluate.h"

using namespace pillars;
using namespace pillars::decode;

namespace {

// log_softmax over the rows of the training graph's logits (B·Tt, V), teacher forcing
// prev_output_tokens (B, Tt) against source batch src (right-padded to Ts).
std::vector<float> graph_logprobs(const TransformerConfig& cfg, ParamStore& params,
                                  const std::vector<std::vector<int32_t>>& src,
                                  const std::vector<std::vector<int32_t>>& prev) {
  const int64_t B = static_cast<int64_t>(src.size()), V = cfg.vocab;
  int64_t Ts = 0, Tt = 0;
  for (const auto& s : src) Ts = std::max<int64_t>(Ts, static_cast<int64_t>(s.size()));
  for (const auto& p : prev) Tt = std::max<int64_t>(Tt, static_cast<int64_t>(p.size()));
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, 0.0f, 0, /*train=*/false);
  m.graph.mark_output(m.logits);
  std::vector<int32_t> st(B * Ts, static_cast<int32_t>(cfg.pad_id)), sl(B),
      pt(B * Tt, static_cast<int32_t>(cfg.pad_id)), tg(B * Tt, static_cast<int32_t>(cfg.pad_id));
  for (int64_t b = 0; b < B; ++b) {
    sl[b] = static_cast<int32_t>(src[b].size());
    std::copy(src[b].begin(), src[b].end(), st.begin() + b * Ts);
    std::copy(prev[b].begin(), prev[b].end(), pt.begin() + b * Tt);
  }
  Executor ex(m.graph);
  ex.bind_params(params);
  ex.bind("src_tokens", Tensor::from_i32({B, Ts}, st));
  ex.bind("src_lengths", Tensor::from_i32({B}, sl));
  ex.bind("prev_output_tokens", Tensor::from_i32({B, Tt}, pt));
  ex.bind("target", Tensor::from_i32({B * Tt}, tg));
  ex.run();
  const float* logits = ex.value(m.logits).data<float>();
  std::vector<float> out(B * Tt * V);
  for (int64_t r = 0; r < B * Tt; ++r) {
    double mx = -1e30, sum = 0;
    for (int64_t v = 0; v < V; ++v) mx = std::max<double>(mx, logits[r * V + v]);
    for (int64_t v = 0; v < V; ++v) sum += std::exp(logits[r * V + v] - mx);
    for (int64_t v = 0; v < V; ++v) out[r * V + v] = static_cast<float>(logits[r * V + v] - mx - std::log(sum));
  }
  return out;
}

const std::vector<std::vector<int32_t>> kShortSources = {{5, 6, 7, 8, 2}, {9, 10, 2}, {11, 12, 13, 2}};

// Three sources of `lengths` tokens (the last one eos), ids cycling through [3, vocab).
std::vector<std::vector<int32_t>> sources_of_lengths(const std::vector<int64_t>& lengths, int64_t vocab) {
  std::vector<std::vector<int32_t>> src;
  for (int64_t n : lengths) {
    std::vector<int32_t> s(n);
    for (int64_t t = 0; t + 1 < n; ++t) s[t] = static_cast<int32_t>(3 + (7 * t + n) % (vocab - 3));
    s[n - 1] = 2;
    src.push_back(s);
  }
  return src;
}

std::vector<int32_t> iota_i32(int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i);
  return v;
}

// A teacher-forced step: row n is fed tokens[n] at position t and continues row n (one row per
// sentence unless k says otherwise).
StepDecoder::Step forced(const std::vector<int32_t>& tokens, int32_t t, int64_t sentences) {
  StepDecoder::Step s;
  s.tokens = tokens;
  s.positions.assign(tokens.size(), t);
  s.row_origin = iota_i32(static_cast<int64_t>(tokens.size()));
  s.sentence_origin = iota_i32(sentences);
  s.rows_per_sentence = static_cast<int64_t>(tokens.size()) / std::max<int64_t>(sentences, 1);
  return s;
}

// Steps through prev (B, Tt) teacher-forced and compares every row's log-probabilities with the
// training graph's. With drop_after >= 0, sentence 1 leaves the batch after that step (compaction).
void check_teacher_forcing(TransformerConfig cfg, const std::vector<std::vector<int32_t>>& src = kShortSources,
                           int drop_after = -1, Device device = Device::cpu) {
  ParamStore params;
  init_transformer_params(cfg, params, 11);
  const std::vector<std::vector<int32_t>> prev = {{2, 14, 15, 16}, {2, 17, 18, 19}, {2, 20, 21, 22}};
  const int64_t Tt = 4, V = cfg.vocab;
  const std::vector<float> ref = graph_logprobs(cfg, params, src, prev);

  const ParamStore on_device = params.on(device);
  StepDecoder dec(cfg, on_device, device);
  dec.start(src, 1, Tt);
  std::vector<int64_t> live = {0, 1, 2};
  double worst = 0;
  for (int32_t t = 0; t < Tt; ++t) {
    std::vector<int32_t> tokens;
    for (int64_t b : live) tokens.push_back(prev[b][t]);
    StepDecoder::Step s = forced(tokens, t, static_cast<int64_t>(live.size()));
    if (t == drop_after + 1 && drop_after >= 0) { // sentence 1 left after the previous step
      s.row_origin = {0, 2};
      s.sentence_origin = {0, 2};
    }
    dec.step(s);
    const Tensor lp = dec.log_probs();
    for (size_t j = 0; j < live.size(); ++j)
      for (int64_t v = 0; v < V; ++v)
        worst = std::max<double>(worst, std::abs(lp.data<float>()[j * V + v] - ref[(live[j] * Tt + t) * V + v]));
    if (t == drop_after) live = {0, 2};
  }
  INFO("worst |diff| = ", worst);
  CHECK(worst < 2e-5);
}

TransformerConfig pruned(TransformerConfig cfg) {
  cfg.module_heads = {
      {"encoder.layers.0.self_attn", 1}, {"decoder.layers.0.self_attn", 1}, {"decoder.layers.1.encoder_attn", 1}};
  return cfg;
}

} // namespace

TEST_CASE("decode: step-by-step log-probabilities equal the training graph, post-norm") {
  check_teacher_forcing(transformer_config("tiny"));
}

TEST_CASE("decode: step-by-step log-probabilities equal the training graph, pre-norm with gelu") {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.pre_norm = true;
  cfg.activation = ops::Activation::gelu;
  check_teacher_forcing(cfg);
}

TEST_CASE(
    "decode: step-by-step log-probabilities equal the training graph, pruned heads (GHT-PS), pre- and post-norm") {
  for (bool pre : {false, true}) {
    TransformerConfig cfg = pruned(transformer_config("tiny"));
    cfg.pre_norm = pre;
    check_teacher_forcing(cfg);
  }
}

TEST_CASE("decode: step-by-step log-probabilities equal the training graph with sources of 512, 300 and 37 tokens") {
  for (bool pre : {false, true}) {
    TransformerConfig cfg = transformer_config("tiny");
    cfg.pre_norm = pre;
    check_teacher_forcing(cfg, sources_of_lengths({512, 300, 37}, cfg.vocab));
    check_teacher_forcing(pruned(cfg), sources_of_lengths({512, 300, 37}, cfg.vocab));
  }
}

TEST_CASE("decode: a sentence leaving the batch (compaction) leaves the others' log-probabilities unchanged") {
  check_teacher_forcing(transformer_config("tiny"), sources_of_lengths({9, 30, 17}, 32), /*drop_after=*/1);
}

TEST_CASE("decode: each sentence's test loss (train::sentence_nll) is the training graph's, in any batch") {
  // Five sentences of unequal target lengths (the last token eos), in batches of 2: sorted by
  // length, so every batch mixes sentences from different places of the split.
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  init_transformer_params(cfg, params, 5);
  const auto src = sources_of_lengths({5, 9, 3, 12, 4}, cfg.vocab);
  std::vector<std::vector<int32_t>> tgt;
  for (int64_t n : {6, 2, 9, 1, 4}) {
    std::vector<int32_t> y = sources_of_lengths({n + 1}, cfg.vocab)[0];
    y.erase(y.begin()); // distinct from the source's tokens
    tgt.push_back(y);
  }
  const std::vector<train::SentenceNll> got = train::sentence_nll(cfg, params, src, tgt, /*batch_sentences=*/2);
  REQUIRE(got.size() == tgt.size());
  for (size_t i = 0; i < tgt.size(); ++i) {
    // The reference: the training graph on this sentence alone, fed eos and then y_0 … y_{n−2}.
    const std::vector<int32_t>& y = tgt[i];
    std::vector<int32_t> prev = {2};
    prev.insert(prev.end(), y.begin(), y.end() - 1);
    const std::vector<float> lp = graph_logprobs(cfg, params, {src[i]}, {prev});
    double nll = 0;
    for (size_t t = 0; t < y.size(); ++t) nll -= lp[t * static_cast<size_t>(cfg.vocab) + static_cast<size_t>(y[t])];
    INFO("sentence ", i);
    CHECK(got[i].tokens == static_cast<int64_t>(y.size()));
    CHECK(got[i].nll == doctest::Approx(nll).epsilon(1e-5));
  }
}

TEST_CASE("decode: the language model's steps equal its training graph, pre- and post-norm") {
  for (bool pre : {false, true}) {
    TransformerConfig cfg = transformer_config("lm-small");
    cfg.vocab = 24, cfg.d_model = 16, cfg.heads = 2, cfg.ffn = 32, cfg.dec_layers = 2, cfg.pre_norm = pre;
    ParamStore params;
    init_transformer_params(cfg, params, 6);
    const std::vector<std::vector<int32_t>> seqs = {{2, 5, 6, 7, 8, 9}, {2, 10, 11, 12, 13, 14}};
    GraphOptions eval_mode;
    eval_mode.train = false;
    LmGraph m = build_lm_training_graph(cfg, 2, 6, eval_mode);
    m.graph.mark_output(m.logits);
    Executor ex(m.graph);
    ex.bind_params(params);
    std::vector<int32_t> flat;
    for (const auto& s : seqs) flat.insert(flat.end(), s.begin(), s.end());
    ex.bind("tokens", Tensor::from_i32({2, 6}, flat));
    ex.bind("target", Tensor::from_i32({12}, std::vector<int32_t>(12, 4)));
    ex.run();
    const float* logits = ex.value(m.logits).data<float>();
    StepDecoder dec(cfg, params);
    dec.start(2, 6);
    double worst = 0;
    for (int32_t t = 0; t < 6; ++t) {
      dec.step(forced({seqs[0][t], seqs[1][t]}, t, 2));
      const Tensor lp = dec.log_probs();
      for (int64_t b = 0; b < 2; ++b) {
        const float* row = logits + (b * 6 + t) * cfg.vocab;
        double mx = -1e30, sum = 0;
        for (int64_t v = 0; v < cfg.vocab; ++v) mx = std::max<double>(mx, row[v]);
        for (int64_t v = 0; v < cfg.vocab; ++v) sum += std::exp(row[v] - mx);
        for (int64_t v = 0; v < cfg.vocab; ++v)
          worst =
              std::max<double>(worst, std::abs(lp.data<float>()[b * cfg.vocab + v] - (row[v] - mx - std::log(sum))));
      }
    }
    INFO("worst |diff| = ", worst);
    CHECK(worst < 2e-5);
  }
}

TEST_CASE("decode: reordering rows carries their cached keys and values") {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  init_transformer_params(cfg, params, 3);
  const int64_t V = cfg.vocab;
  StepDecoder dec(cfg, params);
  const std::vector<std::vector<int32_t>> src = {{5, 6, 7, 2}};
  // Two rows decode histories A = (eos, 8, 9) and B = (eos, 10, 11); after step 2 they swap; the
  // third step then feeds 12 to both. Each row must match a fresh single-row decode of the history.
  dec.start(src, 2, 4);
  const std::vector<std::vector<int32_t>> steps = {{2, 2}, {8, 10}, {9, 11}};
  for (int32_t t = 0; t < 3; ++t) dec.step(forced(steps[t], t, 1));
  StepDecoder::Step swap = forced({12, 12}, 3, 1);
  swap.row_origin = {1, 0};
  dec.step(swap);
  const Tensor lp = dec.log_probs().clone();
  for (int row = 0; row < 2; ++row) {
    const std::vector<int32_t> history =
        row == 0 ? std::vector<int32_t>{2, 10, 11, 12} : std::vector<int32_t>{2, 8, 9, 12};
    StepDecoder one(cfg, params);
    one.start(src, 1, 4);
    for (int32_t t = 0; t < 4; ++t) one.step(forced({history[t]}, t, 1));
    const Tensor ref = one.log_probs();
    for (int64_t v = 0; v < V; ++v)
      CHECK(lp.data<float>()[row * V + v] == doctest::Approx(ref.data<float>()[v]).epsilon(1e-6));
  }
}

TEST_CASE("decode: a step that does not fit the decoder's state is refused, naming the field") {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  init_transformer_params(cfg, params, 3);
  StepDecoder dec(cfg, params);
  dec.start({{5, 6, 2}, {7, 2}}, 2, 3);
  StepDecoder::Step s = forced({2, 2, 2, 2}, 0, 2);
  s.positions[1] = 3;
  CHECK_THROWS_WITH(dec.step(s), doctest::Contains("beyond the 3 slots"));
  s = forced({2, 2, 2, 2}, 0, 2);
  s.row_origin[0] = 4;
  CHECK_THROWS_WITH(dec.step(s), doctest::Contains("continues row 4 of 4"));
  s = forced({2, 2, 2, 2}, 0, 2);
  s.sentence_origin = {0};
  CHECK_THROWS_WITH(dec.step(s), doctest::Contains("step.sentence_origin"));
}

// Every hypothesis a search may produce for a 6-symbol vocabulary (bos, pad, eos, unk, 4, 5), scored
// through the training graph: the beam must find the same set, with the same scores, in order.
TEST_CASE("decode: beam search with a wide beam equals exhaustive search") {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.vocab = 6;
  ParamStore params;
  init_transformer_params(cfg, params, 5);
  StepDecoder dec(cfg, params);
  const std::vector<std::vector<int32_t>> src = {{4, 5, 4, 2}, {5, 2}};
  for (float lenpen : {0.0f, 1.0f, 2.0f}) {
    SearchOptions o;
    o.beam = 128; // wider than every candidate set: nothing is pruned
    o.lenpen = lenpen;
    o.max_len_a = 0, o.max_len_b = 3;
    const auto found = beam_search(dec, src, o);
    for (size_t s = 0; s < src.size(); ++s) {
      // Exhaustive: 1..3 tokens from {unk, 4, 5}, then eos (forced after 3).
      std::vector<std::pair<float, std::vector<int32_t>>> all;
      std::function<void(std::vector<int32_t>)> grow = [&](std::vector<int32_t> words) {
        if (!words.empty()) {
          std::vector<int32_t> prev = {2}, tokens = words;
          prev.insert(prev.end(), words.begin(), words.end());
          tokens.push_back(2);
          const auto lp = graph_logprobs(cfg, params, {src[s]}, {prev});
          double sum = 0;
          for (size_t t = 0; t < tokens.size(); ++t) sum += lp[t * cfg.vocab + tokens[t]];
          all.push_back({static_cast<float>(sum / std::pow(static_cast<double>(tokens.size()), lenpen)), tokens});
        }
        if (words.size() < 3)
          for (int32_t w : {3, 4, 5}) {
            auto longer = words;
            longer.push_back(w);
            grow(longer);
          }
      };
      grow({});
      std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      REQUIRE(found[s].size() == all.size());
      for (size_t i = 0; i < all.size(); ++i) {
        CHECK(found[s][i].tokens == all[i].second);
        CHECK(found[s][i].score == doctest::Approx(all[i].first).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("decode: beam 1 is greedy search") {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  init_transformer_params(cfg, params, 9);
  StepDecoder dec(cfg, params);
  const std::vector<std::vector<int32_t>> src = {{4, 5, 6, 7, 2}};
  SearchOptions o;
  o.beam = 1, o.lenpen = 1.0f, o.max_len_a = 0, o.max_len_b = 6;
  const auto found = beam_search(dec, src, o);
  // Argmax rollout, with pad and bos banned and eos banned at step 0, eos forced at step 6.
  std::vector<int32_t> tokens;
  StepDecoder roll(cfg, params);
  roll.start(src, 1, 7);
  int32_t input = 2;
  for (int32_t step = 0; step <= 6; ++step) {
    roll.step(forced({input}, step, 1));
    const Tensor t = roll.log_probs();
    std::vector<float> lp(t.data<float>(), t.data<float>() + cfg.vocab);
    lp[0] = lp[1] = -INFINITY;
    if (step == 0) lp[2] = -INFINITY;
    if (step == 6)
      input = 2;
    else
      input = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    tokens.push_back(input);
    if (input == 2) break;
  }
  REQUIRE(found[0].size() == 1);
  CHECK(found[0][0].tokens == tokens);
}

// Compaction only moves rows: a batch of sources whose searches end at different steps gives the
// same hypotheses, scores and positional scores with and without it, bit for bit.
TEST_CASE("decode: compaction changes no hypothesis, bit for bit") {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.vocab = 40, cfg.d_model = 32, cfg.heads = 4, cfg.ffn = 64;
  ParamStore params;
  init_transformer_params(cfg, params, 21);
  const auto src = sources_of_lengths({3, 25, 9, 14, 6, 31, 2, 18}, cfg.vocab);
  SearchOptions o;
  o.beam = 4, o.max_len_a = 1.0f, o.max_len_b = 2;
  StepDecoder a(cfg, params), b(cfg, params);
  o.compact = true;
  const auto with = beam_search(a, src, o);
  o.compact = false;
  const auto without = beam_search(b, src, o);
  CHECK(a.compiled_steps() > b.compiled_steps()); // the batch did shrink
  REQUIRE(with.size() == without.size());
  for (size_t s = 0; s < with.size(); ++s) {
    REQUIRE(with[s].size() == without[s].size());
    for (size_t h = 0; h < with[s].size(); ++h) {
      CHECK(with[s][h].tokens == without[s][h].tokens);
      CHECK(std::memcmp(&with[s][h].score, &without[s][h].score, sizeof(float)) == 0);
      REQUIRE(with[s][h].positional_scores.size() == without[s][h].positional_scores.size());
      CHECK(std::memcmp(with[s][h].positional_scores.data(), without[s][h].positional_scores.data(),
                        sizeof(float) * with[s][h].positional_scores.size()) == 0);
    }
  }
}

TEST_CASE("decode: the language model graph is causal, position t sees only tokens up to t") {
  TransformerConfig cfg = transformer_config("lm-small");
  cfg.vocab = 24, cfg.d_model = 16, cfg.heads = 2, cfg.ffn = 32, cfg.dec_layers = 2;
  ParamStore params;
  init_transformer_params(cfg, params, 4);
  GraphOptions eval_mode;
  eval_mode.train = false;
  auto logits_of = [&](std::vector<int32_t> tokens) {
    LmGraph m = build_lm_training_graph(cfg, 1, 6, eval_mode);
    m.graph.mark_output(m.logits);
    Executor ex(m.graph);
    ex.bind_params(params);
    ex.bind("tokens", Tensor::from_i32({1, 6}, tokens));
    ex.bind("target", Tensor::from_i32({6}, {4, 4, 4, 4, 4, 4}));
    ex.run();
    const float* l = ex.value(m.logits).data<float>();
    return std::vector<float>(l, l + 6 * cfg.vocab);
  };
  const auto a = logits_of({5, 6, 7, 8, 9, 10});
  const auto b = logits_of({5, 6, 7, 20, 21, 22}); // differs from position 3 on
  for (int64_t t = 0; t < 6; ++t) {
    bool same = true;
    for (int64_t v = 0; v < cfg.vocab; ++v) same = same && a[t * cfg.vocab + v] == b[t * cfg.vocab + v];
    CHECK(same == (t < 3));
  }
}

// ---- on a GPU ---------------------------------------------------------------------------------

TEST_CASE(
    "decode on CUDA: step-by-step log-probabilities equal the training graph (pre/post-norm, pruned, long sources, "
    "compaction)") {
  if (pillars::testing::no_gpu()) return;
  for (bool pre : {false, true}) {
    TransformerConfig cfg = transformer_config("tiny");
    cfg.pre_norm = pre;
    check_teacher_forcing(cfg, kShortSources, -1, Device::cuda);
    check_teacher_forcing(pruned(cfg), kShortSources, -1, Device::cuda);
    check_teacher_forcing(cfg, sources_of_lengths({512, 300, 37}, cfg.vocab), -1, Device::cuda);
    check_teacher_forcing(cfg, sources_of_lengths({9, 30, 17}, cfg.vocab), 1, Device::cuda);
  }
}

TEST_CASE("decode on CUDA: beam search finds the CPU's hypotheses, with and without compaction") {
  if (pillars::testing::no_gpu()) return;
  TransformerConfig cfg = transformer_config("tiny");
  cfg.vocab = 40, cfg.d_model = 32, cfg.heads = 4, cfg.ffn = 64;
  ParamStore params;
  init_transformer_params(cfg, params, 21);
  const ParamStore gpu = params.on(Device::cuda);
  const auto src = sources_of_lengths({3, 25, 9, 14, 6, 31, 2, 18}, cfg.vocab);
  for (bool compact : {true, false}) {
    SearchOptions o;
    o.beam = 4, o.max_len_a = 1.0f, o.max_len_b = 2, o.compact = compact;
    StepDecoder on_cpu(cfg, params), on_gpu(cfg, gpu, Device::cuda);
    const auto a = beam_search(on_cpu, src, o), b = beam_search(on_gpu, src, o);
    for (size_t s = 0; s < a.size(); ++s) {
      CHECK(a[s].front().tokens == b[s].front().tokens);
      CHECK(a[s].front().score == doctest::Approx(b[s].front().score).epsilon(1e-4));
    }
  }
}

TEST_CASE("decode on CUDA: the cache and beam ops equal their CPU kernels bit for bit") {
  if (pillars::testing::no_gpu()) return;
  // One graph: gather a (5, 3, 2, 2) cache into 3 rows (in place), write a slot, rank candidates
  // with ties, NaN, −inf rows and every eos rule.
  Graph g;
  const ValueId cache = g.input("cache", {5, 3, 2, 2}), origin = g.input("origin", {3}, DType::i32),
                filled = g.input("filled", {3}, DType::i32), x = g.input("x", {3, 1, 2, 2}),
                pos = g.input("pos", {3}, DType::i32), lp = g.input("lp", {6, 7}), rs = g.input("rs", {6}),
                rule = g.input("rule", {6}, DType::i32);
  const ValueId written = ops::cache_write(g, ops::cache_gather(g, cache, origin, filled), x, pos);
  g.mark_output(written);
  const ops::BeamCandidates c =
      ops::beam_candidates(g, lp, rs, rule, {.beam = 2, .candidates = 5, .pad = 1, .bos = 0, .eos = 2});
  g.mark_output(c.scores);
  g.mark_output(c.index);
  std::vector<float> cache_v(60), x_v(12), lp_v(42);
  for (size_t i = 0; i < cache_v.size(); ++i) cache_v[i] = static_cast<float>(i);
  for (size_t i = 0; i < x_v.size(); ++i) x_v[i] = -1.0f - static_cast<float>(i);
  for (size_t i = 0; i < lp_v.size(); ++i) lp_v[i] = -static_cast<float>(i % 5) * 0.5f; // many ties
  lp_v[9] = NAN;
  auto run = [&](Device d) {
    Executor ex(g, d);
    const Tensor cache_t = Tensor::from({5, 3, 2, 2}, cache_v).to(d); // the state: on the device
    ex.bind("cache", cache_t);
    ex.bind("origin", Tensor::from_i32({3}, {4, 0, 2}));
    ex.bind("filled", Tensor::from_i32({3}, {2, 3, 1}));
    ex.bind("x", Tensor::from({3, 1, 2, 2}, x_v));
    ex.bind("pos", Tensor::from_i32({3}, {2, 0, 1}));
    ex.bind("lp", Tensor::from({6, 7}, lp_v));
    ex.bind("rs", Tensor::from({6}, {0.0f, -1.0f, -INFINITY, -0.5f, NAN, -2.0f}));
    ex.bind("rule", Tensor::from_i32({6}, {1, 0, 1, 2, 1, 1}));
    ex.run();
    return std::vector<Tensor>{ex.fetch(written), ex.fetch(c.scores), ex.fetch(c.index)};
  };
  const auto cpu = run(Device::cpu), gpu = run(Device::cuda), gpu_again = run(Device::cuda);
  auto values = [](const Tensor& t) {
    std::string s;
    for (int64_t i = 0; i < t.numel(); ++i)
      s += t.dtype() == DType::i32 ? str_cat(" ", t.data<int32_t>()[i]) : str_cat(" ", t.data<float>()[i]);
    return s;
  };
  INFO("scores: CPU", values(cpu[1]), " | GPU", values(gpu[1]), " | GPU again", values(gpu_again[1]));
  INFO("index: CPU", values(cpu[2]), " | GPU", values(gpu[2]), " | GPU again", values(gpu_again[2]));
  // Rows 0..2 up to their filled slots plus the written slot are defined; compare those.
  const int32_t filled_v[3] = {2, 3, 1}, pos_v[3] = {2, 0, 1};
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 3; ++t)
      if (t < filled_v[r] || t == pos_v[r])
        for (int w = 0; w < 4; ++w)
          CHECK(cpu[0].data<float>()[(r * 3 + t) * 4 + w] == gpu[0].data<float>()[(r * 3 + t) * 4 + w]);
  CHECK(std::memcmp(cpu[1].raw(), gpu[1].raw(), cpu[1].nbytes()) == 0);
  CHECK(std::memcmp(cpu[2].raw(), gpu[2].raw(), cpu[2].nbytes()) == 0);
  CHECK(std::memcmp(gpu[1].raw(), gpu_again[1].raw(), gpu[1].nbytes()) == 0); // and the GPU repeats itself
  CHECK(std::memcmp(gpu[2].raw(), gpu_again[2].raw(), gpu[2].nbytes()) == 0);
}
