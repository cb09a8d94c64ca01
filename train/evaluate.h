// Decoding a corpus and scoring it: what validation BLEU, `pillars eval` and `pillars translate` run.
//
//   Translations t = translate_corpus(cfg, params, pipeline, sources, search, /*batch_sentences=*/64);
//   BleuReport b = score_bleu(t, refs, pipeline, /*lowercase=*/false);
//
// Sentences are decoded in batches of similar source length (sorted, then restored to the input
// order), each batch by decode::beam_search with cached keys and values, on the device that holds
// the parameters (decode/step_decoder.h): a GPU run validates on the GPU, with no host copy.
#pragma once
#include <optional>

#include "base/precision.h"
#include <string>
#include <vector>

#include "decode/search.h"
#include "models/transformer.h"
#include "train/pipeline.h"

namespace pillars::train {

struct Translations {
  std::vector<std::string> text;         // detokenized hypotheses, input order
  std::vector<std::vector<int32_t>> ids; // the best hypothesis' ids (eos last)
  double seconds = 0;                    // decoding time (encode + search)
  double sentences_per_second() const { return seconds > 0 ? static_cast<double>(text.size()) / seconds : 0; }
  // The share of those seconds' thread time spent waiting for a core that another process held
  // (base/thread_times.h): near 0 where the speed is the code's; unset where the OS keeps no record.
  std::optional<double> waiting_share;
  int64_t generated_tokens = 0;
  std::vector<size_t> truncated; // the sources cut to max_source_len (input order)
};

// "" where the decoding had the cores to itself (or no record says), else a clause for the speed's
// message: "; the threads waited for a core 62 % of the time (another process held it), …".
std::string load_note(const Translations& t);

// batch_sentences is capped so that a batch has at most 2048 decoder rows (sentences × beam).
// progress: print "decoded n/N sentences" to stderr (rewritten in place on a terminal; elsewhere a
// line every 30 seconds and one at the end). Sources longer than max_source_len
// tokens keep their first max_source_len − 1 tokens and their eos (as in training). precision: the
// decoder's matmul precision on the CPU (decode/step_decoder.h); unset, the process's.
Translations translate_corpus(const TransformerConfig& cfg, const ParamStore& params, const TextPipeline& pipeline,
                              const std::vector<std::string>& sources, const decode::SearchOptions& search,
                              int64_t batch_sentences, bool progress = false, int64_t max_source_len = 1024,
                              std::optional<Precision> precision = std::nullopt);

struct BleuReport {
  double sacrebleu = 0;       // sacreBLEU's default BLEU of the detokenized output vs raw references
  std::string sacrebleu_line; // "BLEU = 34.12 67.1/43.2/… (BP = … ratio = … hyp_len = … ref_len = …)"
  double tokenized = 0;       // fairseq's BLEU4 on Moses-tokenized, BPE-removed text (first reference)
  std::string tokenized_line;
};
// refs[k][i]: reference k of sentence i (raw text).
BleuReport score_bleu(const Translations& t, const std::vector<std::vector<std::string>>& refs,
                      const TextPipeline& pipeline, bool lowercase);

// The teacher-forced loss of each sentence: nll = −Σ_t log p(y_t | y_<t, x) in nats over its
// target tokens (eos included), as the test loss counts them, so Σ nll / Σ tokens is the split's
// loss. The decoder is fed eos (the start symbol) and then the target's own tokens, one step at a
// time with cached keys and values, in batches of `batch_sentences` taken shortest target first
// (a batch then steps about as often as its sentences have tokens; each row is computed on its own,
// so the order changes what a batch holds, not a sentence's number). What a paired bootstrap of
// the loss resamples (study/table.h).
struct SentenceNll {
  double nll = 0;
  int64_t tokens = 0;
};
std::vector<SentenceNll> sentence_nll(const TransformerConfig& cfg, const ParamStore& params,
                                      const std::vector<std::vector<int32_t>>& src,
                                      const std::vector<std::vector<int32_t>>& tgt, int64_t batch_sentences,
                                      std::optional<Precision> precision = std::nullopt);

} // namespace pillars::train
