// See bench_decode.h.
#include "tools/bench/bench_decode.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "datasets/lines.h"
#include "datasets/resolve.h"
#include "datasets/xz.h"
#include "decode/search.h"
#include "decode/step_decoder.h"
#include "ght/prune.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
#include "models/transformer.h"
#include "tools/bench/measure.h"
#include "train/evaluate.h"

namespace pillars::bench {

namespace {

using Sources = std::vector<std::vector<int32_t>>;
using Hypotheses = std::vector<std::vector<decode::Hypothesis>>;

// Multi30k test sentences as ids: each word hashed into [4, V), then eos. Real lengths, not real
// ids: the models are untrained anyway. `side`: "de" (the sources) or "en" (the targets).
Sources multi30k_sources(int64_t count, int64_t vocab, const std::string& side = "de") {
  const data::DatasetSpec& d = data::find_dataset("multi30k-de-en");
  const std::string path = data::materialize(d, d.file("tok/test_2016_flickr.lc.norm.tok." + side)).path;
  std::ifstream in(path);
  Sources out;
  std::string line;
  while (static_cast<int64_t>(out.size()) < count && std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<int32_t> ids;
    for (std::string w; words >> w;) ids.push_back(static_cast<int32_t>(4 + std::hash<std::string>{}(w) % (vocab - 4)));
    ids.push_back(2);
    out.push_back(std::move(ids));
  }
  PILLARS_CHECK(static_cast<int64_t>(out.size()) == count, "bench decode: ", path, " has fewer than ", count, " lines");
  return out;
}

Sources random_sources(int64_t count, int64_t vocab) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(vocab - 1));
  std::uniform_int_distribution<int> length(20, 30);
  Sources out(static_cast<size_t>(count));
  for (auto& s : out) {
    s.resize(static_cast<size_t>(length(rng)));
    for (auto& t : s) t = token(rng);
    s.back() = 2;
  }
  return out;
}

// Decodes all sources in batches of `batch` sentences of similar length (sorted, as
// train::translate_corpus does); returns the best hypothesis of each, in input order.
std::vector<std::vector<int32_t>> decode_all(const Sources& sources, int64_t batch,
                                             const std::function<Hypotheses(const Sources&)>& search) {
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  std::vector<std::vector<int32_t>> best(sources.size());
  for (size_t at = 0; at < order.size(); at += static_cast<size_t>(batch)) {
    Sources part;
    for (size_t j = at; j < std::min(order.size(), at + static_cast<size_t>(batch)); ++j)
      part.push_back(sources[order[j]]);
    const Hypotheses h = search(part);
    for (size_t j = 0; j < part.size(); ++j) best[order[at + j]] = h[j].front().tokens;
  }
  return best;
}

struct Figure {
  double sentences_per_second = 0, tokens_per_second = 0;
  std::vector<std::vector<int32_t>> best;
};

Figure measure(int repeats, const Sources& sources, int64_t batch,
               const std::function<Hypotheses(const Sources&)>& search) {
  Figure f;
  const double s = median_seconds(repeats, [&] { f.best = decode_all(sources, batch, search); });
  int64_t tokens = 0;
  for (const auto& b : f.best) tokens += static_cast<int64_t>(b.size());
  f.sentences_per_second = static_cast<double>(sources.size()) / s;
  f.tokens_per_second = static_cast<double>(tokens) / s;
  return f;
}

// One model, one workload: the step decoder without compaction (finished sentences stay in the
// batch) and with it. Returns the compacting decoder's sentences/s.
double compare(const char* model, const char* workload, const TransformerConfig& cfg, const ParamStore& params,
               const Sources& sources, int64_t batch, decode::SearchOptions o, int repeats) {
  decode::StepDecoder decoder(cfg, params);
  o.compact = false;
  const Figure plain =
      measure(repeats, sources, batch, [&](const Sources& s) { return decode::beam_search(decoder, s, o); });
  o.compact = true;
  const Figure now =
      measure(repeats, sources, batch, [&](const Sources& s) { return decode::beam_search(decoder, s, o); });
  size_t same = 0;
  for (size_t i = 0; i < sources.size(); ++i) same += plain.best[i] == now.best[i];
  std::printf(
      "  %-7s %-6s  no compaction %7.2f sent/s %8.1f tok/s | compaction %7.2f sent/s %8.1f tok/s = %.2fx  "
      "(%zu/%zu best hypotheses identical)\n",
      model, workload, plain.sentences_per_second, plain.tokens_per_second, now.sentences_per_second,
      now.tokens_per_second, now.sentences_per_second / plain.sentences_per_second, same, sources.size());
  std::fflush(stdout);
  return now.sentences_per_second;
}

// One model, one workload: the same decoding at precision fp32, then bf16 (compaction on).
void compare_precisions(const char* model, const char* workload, const TransformerConfig& cfg, const ParamStore& params,
                        const Sources& sources, int64_t batch, decode::SearchOptions o, int repeats) {
  decode::StepDecoder fp32(cfg, params), bf16(cfg, params);
  fp32.set_precision(Precision::fp32);
  bf16.set_precision(Precision::bf16);
  const Figure a = measure(repeats, sources, batch, [&](const Sources& s) { return decode::beam_search(fp32, s, o); });
  const Figure b = measure(repeats, sources, batch, [&](const Sources& s) { return decode::beam_search(bf16, s, o); });
  size_t same = 0;
  for (size_t i = 0; i < sources.size(); ++i) same += a.best[i] == b.best[i];
  std::printf(
      "  %-6s %-6s  fp32 %8.1f tok/s | bf16 %8.1f tok/s = %.2fx  (%zu/%zu best hypotheses identical; %lld weight "
      "matrices packed once, %.1f MB)\n",
      model, workload, a.tokens_per_second, b.tokens_per_second, b.tokens_per_second / a.tokens_per_second, same,
      sources.size(), static_cast<long long>(bf16.packed_weights()), bf16.packed_weight_bytes() / 1e6);
  std::fflush(stdout);
}

// The per-sentence test loss (train::sentence_nll, what `pillars eval` writes for the paired
// bootstrap) of all 1,000 test_2016_flickr pairs, in batches of 64: taken in the split's order
// (each batch steps as often as its longest target: sentence_nll called batch by batch), then
// shortest target first (sentence_nll called on the whole split, as eval does).
void compare_sentence_loss(const char* model, const TransformerConfig& cfg, const ParamStore& params, int repeats) {
  const Sources src = multi30k_sources(1000, cfg.vocab, "de"), tgt = multi30k_sources(1000, cfg.vocab, "en");
  constexpr size_t kBatch = 64;
  std::vector<train::SentenceNll> in_order, sorted;
  const double a = median_seconds(repeats, [&] {
    in_order.clear();
    for (size_t at = 0; at < src.size(); at += kBatch) {
      const size_t end = std::min(src.size(), at + kBatch);
      const auto part = train::sentence_nll(cfg, params, Sources(src.begin() + at, src.begin() + end),
                                            Sources(tgt.begin() + at, tgt.begin() + end), kBatch);
      in_order.insert(in_order.end(), part.begin(), part.end());
    }
  });
  const double b = median_seconds(repeats, [&] { sorted = train::sentence_nll(cfg, params, src, tgt, kBatch); });
  size_t same = 0;
  for (size_t i = 0; i < src.size(); ++i) same += in_order[i].nll == sorted[i].nll;
  std::printf(
      "  %-7s per-sentence loss  split's order %7.1f sent/s | shortest target first %7.1f sent/s = %.2fx  (%zu/%zu "
      "sentences' losses identical)\n",
      model, src.size() / a, src.size() / b, a / b, same, src.size());
  std::fflush(stdout);
}

// What both benchmarks decode with: the small and base models (small with base's vocabulary),
// random weights from seed 1; 128 Multi30k test sentences ("real"), and 48 random sources forced to
// 28 target tokens ("forced"); beam 5. Sets the OpenMP thread count first.
struct Setup {
  TransformerConfig small, base;
  ParamStore small_params, base_params;
  Sources real, forced;
  decode::SearchOptions real_o, forced_o;

  explicit Setup(int threads) {
    omp_set_num_threads(threads);
    base = transformer_config("base");
    small = transformer_config("small");
    small.vocab = base.vocab;
    init_transformer_params(small, small_params, 1);
    init_transformer_params(base, base_params, 1);
    real = multi30k_sources(128, base.vocab);
    forced = random_sources(48, base.vocab);
    real_o.beam = forced_o.beam = 5;
    forced_o.max_len_a = 0, forced_o.max_len_b = 28, forced_o.min_len = 28;
  }
};

} // namespace

int bench_decode_bf16(int threads, int repeats) {
  const Setup s(threads);
  std::printf(
      "beam-5 decoding through the executor at precision fp32, then bf16 (compaction on), %d thread(s), median of %d "
      "(vocabulary %lld, random weights)\n",
      threads, repeats, static_cast<long long>(s.base.vocab));
  std::printf("CPU %s, ISA %s, bf16 GEMM path %s\n", cpu_model_name().c_str(), cpu::isa_name(cpu::active_isa()),
              cpu::gemm_bf16_path());
  std::printf("  real: %zu Multi30k test_2016 sentences, batches of 64; forced: %zu sources, 28 target tokens each\n",
              s.real.size(), s.forced.size());
  compare_precisions("small", "real", s.small, s.small_params, s.real, 64, s.real_o, repeats);
  compare_precisions("small", "forced", s.small, s.small_params, s.forced, 48, s.forced_o, repeats);
  compare_precisions("base", "real", s.base, s.base_params, s.real, 64, s.real_o, repeats);
  compare_precisions("base", "forced", s.base, s.base_params, s.forced, 48, s.forced_o, repeats);
  return 0;
}

int bench_decode(int threads, int repeats) {
  const Setup s(threads);
  ght::HeadSelection keep;
  for (const std::string& module : attention_modules(s.base)) keep[module] = {0, 5};
  const ght::PrunedModel ps = ght::prune_heads(s.base, s.base_params, keep);
  std::printf(
      "beam-5 decoding through the executor, CPU, %d threads, median of %d, with and without compaction "
      "(vocabulary %lld, random weights)\n",
      threads, repeats, static_cast<long long>(s.base.vocab));
  std::printf(
      "  real: %zu Multi30k test_2016 sentences, batches of 64 (eval.batch_sentences); forced: %zu sources, 28 target "
      "tokens each\n",
      s.real.size(), s.forced.size());
  compare("small", "real", s.small, s.small_params, s.real, 64, s.real_o, repeats);
  compare("small", "forced", s.small, s.small_params, s.forced, 48, s.forced_o, repeats);
  const double base_real = compare("base", "real", s.base, s.base_params, s.real, 64, s.real_o, repeats);
  const double base_forced = compare("base", "forced", s.base, s.base_params, s.forced, 48, s.forced_o, repeats);
  const double ps_real = compare("GHT-PS", "real", ps.cfg, ps.params, s.real, 64, s.real_o, repeats);
  const double ps_forced = compare("GHT-PS", "forced", ps.cfg, ps.params, s.forced, 48, s.forced_o, repeats);
  std::printf("  GHT-PS (2 of 8 heads) decodes %.2fx (real) and %.2fx (forced) as fast as base (target >= 1.15x)\n",
              ps_real / base_real, ps_forced / base_forced);
  std::printf("teacher-forced loss of each of the 1,000 test_2016_flickr pairs (pillars eval's eval_<split>.nll)\n");
  compare_sentence_loss("small", s.small, s.small_params, repeats);
  return 0;
}

} // namespace pillars::bench
