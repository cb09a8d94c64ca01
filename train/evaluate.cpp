// See evaluate.h.
#include "train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/error.h"
#include "decode/step_decoder.h"
#include "base/progress.h"
#include "metrics/bleu.h"
#include "metrics/fairseq_bleu.h"
#include "text/bpe.h"

namespace pillars::train {

Translations translate_corpus(const TransformerConfig& cfg, const ParamStore& params, const TextPipeline& pipeline,
                              const std::vector<std::string>& sources, const decode::SearchOptions& search,
                              int64_t batch_sentences, bool progress, int64_t max_source_len,
                              std::optional<Precision> precision) {
  PILLARS_CHECK(batch_sentences >= 1, "translate_corpus: batch_sentences must be >= 1");
  Translations t;
  t.text.resize(sources.size());
  t.ids.resize(sources.size());
  std::vector<std::vector<int32_t>> src(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    src[i] = pipeline.encode_source(sources[i]);
    if (src[i].size() > static_cast<size_t>(max_source_len)) t.truncated.push_back(i);
    truncate_keeping_eos(src[i], static_cast<size_t>(max_source_len));
  }
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return src[a].size() < src[b].size(); });

  decode::StepDecoder decoder(cfg, params, params.device()); // where the parameters are: the CPU or a GPU
  if (precision) decoder.set_precision(*precision);
  // A wide beam decodes fewer sentences at a time: every row holds key/value caches, so the rows of
  // a batch (sentences × beam) stay within kMaxRows whatever the beam.
  constexpr int64_t kMaxRows = 2048;
  batch_sentences = std::max<int64_t>(1, std::min(batch_sentences, kMaxRows / std::max<int64_t>(search.beam, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine line(progress ? stderr : nullptr, "decoded", "sentences");
  for (size_t at = 0; at < order.size(); at += static_cast<size_t>(batch_sentences)) {
    const size_t end = std::min(order.size(), at + static_cast<size_t>(batch_sentences));
    std::vector<std::vector<int32_t>> batch;
    for (size_t j = at; j < end; ++j) batch.push_back(src[order[j]]);
    const auto hyps = decode::beam_search(decoder, batch, search);
    for (size_t j = at; j < end; ++j) {
      t.ids[order[j]] = hyps[j - at].front().tokens;
      t.generated_tokens += static_cast<int64_t>(t.ids[order[j]].size());
    }
    line.update(static_cast<int64_t>(end), static_cast<int64_t>(order.size()));
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  line.finish(static_cast<int64_t>(order.size()), t.seconds);
  for (size_t i = 0; i < sources.size(); ++i) t.text[i] = pipeline.decode_target(t.ids[i]);
  return t;
}

BleuReport score_bleu(const Translations& t, const std::vector<std::vector<std::string>>& refs,
                      const TextPipeline& pipeline, bool lowercase) {
  PILLARS_CHECK(!refs.empty(), "score_bleu: no references");
  for (const auto& r : refs)
    PILLARS_CHECK(r.size() == t.text.size(), "score_bleu: ", t.text.size(), " hypotheses but ", r.size(),
                  " references");
  BleuReport b;
  metrics::BleuOptions o;
  o.lowercase = lowercase;
  const metrics::BleuResult s = metrics::corpus_bleu(t.text, refs, o);
  b.sacrebleu = s.score;
  b.sacrebleu_line = s.format();
  // fairseq's tokenized BLEU: hypotheses and the first references as the model's tokenizer sees them.
  std::vector<std::string> hyp_tok, ref_tok;
  for (size_t i = 0; i < t.text.size(); ++i) {
    hyp_tok.push_back(pipeline.tokenized_target(t.ids[i]));
    std::string r = pipeline.segment(refs[0][i], /*source=*/false);
    ref_tok.push_back(pipeline.settings().bpe ? text::remove_bpe(r) : r);
  }
  metrics::FairseqBleu scorer;
  for (size_t i = 0; i < hyp_tok.size(); ++i) scorer.add_tokens(ref_tok[i], hyp_tok[i]);
  b.tokenized = scorer.score();
  b.tokenized_line = scorer.result_string();
  return b;
}

std::vector<SentenceNll> sentence_nll(const TransformerConfig& cfg, const ParamStore& params,
                                      const std::vector<std::vector<int32_t>>& src,
                                      const std::vector<std::vector<int32_t>>& tgt, int64_t batch_sentences,
                                      std::optional<Precision> precision) {
  PILLARS_CHECK(src.size() == tgt.size() && batch_sentences >= 1, "sentence_nll: ", src.size(), " sources for ",
                tgt.size(), " targets");
  std::vector<SentenceNll> out(src.size());
  decode::StepDecoder decoder(cfg, params, params.device());
  if (precision) decoder.set_precision(*precision);
  const int64_t V = cfg.vocab;
  for (size_t at = 0; at < src.size(); at += static_cast<size_t>(batch_sentences)) {
    const size_t end = std::min(src.size(), at + static_cast<size_t>(batch_sentences));
    const std::vector<std::vector<int32_t>> sources(src.begin() + static_cast<std::ptrdiff_t>(at),
                                                    src.begin() + static_cast<std::ptrdiff_t>(end));
    size_t longest = 0;
    for (size_t i = at; i < end; ++i) longest = std::max(longest, tgt[i].size());
    decoder.start(sources, /*rows_per_sentence=*/1, static_cast<int64_t>(longest) + 1);
    const size_t N = end - at;
    decode::StepDecoder::Step step;
    for (size_t r = 0; r < N; ++r)
      step.row_origin.push_back(static_cast<int32_t>(r)), step.sentence_origin.push_back(static_cast<int32_t>(r));
    step.tokens.resize(N);
    for (size_t t = 0; t < longest; ++t) {
      // Row r is fed y_{t−1} (eos at t = 0) and scored on y_t; rows past their end are fed eos
      // and not scored.
      for (size_t r = 0; r < N; ++r) {
        const std::vector<int32_t>& y = tgt[at + r];
        step.tokens[r] = t == 0 || t > y.size() ? step.eos : y[t - 1];
      }
      step.positions.assign(N, static_cast<int32_t>(t));
      decoder.step(step);
      const Tensor lp = decoder.log_probs(); // (N, V)
      const float* p = lp.data<float>();
      for (size_t r = 0; r < N; ++r) {
        const std::vector<int32_t>& y = tgt[at + r];
        if (t >= y.size()) continue;
        out[at + r].nll -= static_cast<double>(p[static_cast<int64_t>(r) * V + y[t]]);
        ++out[at + r].tokens;
      }
    }
  }
  return out;
}

} // namespace pillars::train
