// Corpus BLEU exactly as sacreBLEU 2.x computes and prints it.
//
//   using namespace pillars::metrics;
//   std::vector<std::string> hyps = {...};                 // one detokenized line per segment
//   std::vector<std::vector<std::string>> refs = {ref_a, ref_b};   // refs[k][i]: stream k, line i
//   BleuResult r = corpus_bleu(hyps, refs);                // defaults = sacreBLEU's BLEU()
//   std::cout << r.format() << "\n";
//   // BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
//
// Defaults match `sacrebleu.metrics.BLEU()`: tokenizer 13a, n-gram order 4, smoothing "exp",
// effective order off, case kept. Options cover the rest of sacreBLEU's BLEU knobs that are
// language-independent: tokenizers none/13a/char, smoothing none/floor/add-k/exp, lowercase,
// effective order, max order. (The intl, zh, ja-mecab, ko-mecab and spm tokenizers are not here.)
//
// What the computation is (sacreBLEU's, step by step):
//  * each segment: optionally lowercase (Python str.lower), strip trailing whitespace, tokenize,
//    split on whitespace. An empty reference line ("") is dropped for that segment (variable
//    number of references); a segment whose references are all empty is an error.
//  * per segment: hypothesis n-gram counts, n = 1..N; reference counts are the max over that
//    segment's references; matches = sum over hypothesis n-grams of min(hyp count, ref max count).
//    The reference length is the one closest to the hypothesis length, the shorter on a tie.
//  * corpus: add up sys_len, ref_len, matches[n] (counts) and hypothesis n-grams[n] (totals).
//  * precision p_n = 100 * counts[n] / totals[n]; a zero count is smoothed ("exp": the k-th zero
//    becomes 100 / (2^k * totals[n]), mteval-v13a's rule); BP = exp(1 - ref_len/sys_len) when
//    sys_len < ref_len, else 1; BLEU = BP * exp(mean over n of log p_n), with log 0 taken as
//    -9999999999 (so any unsmoothed zero makes BLEU 0). A corpus with no match at all scores 0.
//
// Tokenized BLEU as fairseq prints it (`fairseq-generate --scoring bleu`) is in
// metrics/fairseq_bleu.h; it is a different computation (no smoothing, one reference).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pillars::metrics {

enum class BleuTokenizer { k13a, kNone, kChar };
enum class BleuSmooth { kNone, kFloor, kAddK, kExp };

struct BleuOptions {
  BleuTokenizer tokenize = BleuTokenizer::k13a;
  BleuSmooth smooth = BleuSmooth::kExp;
  // floor: default 0.1; add-k: default 1 (sacreBLEU's SMOOTH_DEFAULTS); ignored otherwise.
  std::optional<double> smooth_value;
  int max_ngram_order = 4;
  // Average only over the orders that have at least one hypothesis n-gram (sentence-level BLEU).
  bool effective_order = false;
  bool lowercase = false;
};

// sacreBLEU's sentence_bleu defaults: exp smoothing with effective order on.
BleuOptions sentence_bleu_options();

// The corpus-level sufficient statistics; add segments' stats with +=.
struct BleuStats {
  std::int64_t sys_len = 0, ref_len = 0;
  std::vector<std::int64_t> counts, totals; // per order n = 1..N: matched / hypothesis n-grams
  BleuStats& operator+=(const BleuStats& other);
};

struct BleuResult {
  double score = 0; // 0..100
  std::vector<std::int64_t> counts, totals;
  std::vector<double> precisions; // percent, after smoothing
  double bp = 0;
  std::int64_t sys_len = 0, ref_len = 0;
  double ratio = 0; // sys_len / ref_len (0 when ref_len is 0)
  // sacreBLEU's score line: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len =
  // 17 ref_len = 18)"; `width` is the number of decimals of the score (sacreBLEU's -w).
  std::string format(int width = 2) const;
};

// Tokenizers (input: one line, UTF-8). tokenize_13a is mteval-v13a's / sacreBLEU's "13a".
std::string tokenize_13a(std::string_view line);
std::string tokenize_char(std::string_view line);
// What sacreBLEU does to each line before counting: lowercase (if asked), rstrip, tokenize.
std::string bleu_preprocess(std::string_view line, const BleuOptions& opts);

// Statistics of one segment against its references (empty references are skipped).
BleuStats bleu_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             const BleuOptions& opts = {});
// BLEU from statistics (sacreBLEU's BLEU.compute_bleu).
BleuResult compute_bleu(const BleuStats& stats, const BleuOptions& opts = {});

// refs[k][i] is reference stream k's line for hypothesis i (sacreBLEU's layout). Every stream must
// have hyps.size() lines.
BleuResult corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                       const BleuOptions& opts = {});
// One segment against one or more references (sacreBLEU's BLEU.sentence_score).
BleuResult sentence_bleu(std::string_view hyp, const std::vector<std::string>& refs,
                         const BleuOptions& opts = sentence_bleu_options());

// sacreBLEU's signature without the version field, e.g. "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp".
std::string bleu_signature(const BleuOptions& opts, int nrefs);

} // namespace pillars::metrics
