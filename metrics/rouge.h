// ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum exactly as Google's `rouge-score` package computes them
// (rouge_scorer.RougeScorer with its DefaultTokenizer).
//
//   using namespace pillars::metrics;
//   RougeOptions opt{.use_stemmer = true};
//   RougeScores s = rouge_score("the cat sat", "a cat sat down", opt);   // (target, prediction)
//   double f = s.rougeL.fmeasure;
//   RougeCorpus c = corpus_rouge(predictions, {references}, opt);       // refs[k][i], like BLEU
//   double mean_r2 = c.rouge2.fmeasure;                                  // mean over examples
//
// Tokenizer (rouge/tokenize.py): Python str.lower(); every run of characters other than a-z 0-9
// is a separator; with use_stemmer, tokens longer than 3 characters go through NLTK's Porter
// stemmer (metrics/porter.h). Non-ASCII letters are therefore separators (the two code points
// whose Python lowercase is ASCII, U+0130 -> "i" + U+0307 and the Kelvin sign U+212A -> "k",
// behave as they do in Python).
//
// Scores, each with precision P, recall R and F = 2PR / (P + R) (0 when P + R = 0):
//  * rougeN: clipped n-gram overlap m; P = m / max(#prediction n-grams, 1), R = m / max(#target
//    n-grams, 1).
//  * rougeL: the longest common subsequence of the two token lists; P = LCS / #prediction tokens,
//    R = LCS / #target tokens; 0 if either is empty.
//  * rougeLsum: summary-level LCS. Both texts are split on "\n" into sentences (empty lines
//    dropped); for each target sentence, the union of its LCS (one LCS per prediction sentence,
//    rouge-score's backtracking picks which) gives hit tokens, each counted only while both texts
//    still have an unused copy of that token. P = hits / #prediction tokens, R = hits / #target
//    tokens. (rouge-score's split_summaries=True, which sentence-splits with NLTK, is not here:
//    put one sentence per line yourself.)
//
// Several references: for each rouge type separately the reference with the highest F is taken
// (rouge-score's score_multi; the first one on a tie), and its P, R, F are reported.
// Corpus: the plain mean over examples of P, R and F. This is what rouge-score's
// BootstrapAggregator estimates as its "mid" value (it reports a bootstrap median of means, which
// is random and differs from this exact mean by about 1e-3); report F1 x 100 as usual.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pillars::metrics {

struct RougeScore {
  double precision = 0, recall = 0, fmeasure = 0;
};

struct RougeScores {
  RougeScore rouge1, rouge2, rougeL, rougeLsum;
};

struct RougeCorpus {
  RougeScores mean;
  std::size_t n = 0; // examples averaged
};

struct RougeOptions {
  bool use_stemmer = false;
};

std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer);

// Building blocks on token lists.
RougeScore rouge_n(const std::vector<std::string>& target, const std::vector<std::string>& prediction, int n);
RougeScore rouge_l(const std::vector<std::string>& target, const std::vector<std::string>& prediction);
RougeScore rouge_lsum(const std::vector<std::vector<std::string>>& target_sents,
                      const std::vector<std::vector<std::string>>& prediction_sents);
// Indices into `ref` of the LCS that rouge-score's _backtrack_norec reads out (ascending).
std::vector<std::size_t> lcs_indices(const std::vector<std::string>& ref, const std::vector<std::string>& can);

// One example. Argument order as rouge-score's scorer.score(target, prediction).
RougeScores rouge_score(std::string_view target, std::string_view prediction, const RougeOptions& opts = {});
RougeScores rouge_score_multi(const std::vector<std::string>& targets, std::string_view prediction,
                              const RougeOptions& opts = {});
// references[k][i]: reference stream k's text for prediction i (same layout as corpus_bleu).
RougeCorpus corpus_rouge(const std::vector<std::string>& predictions,
                         const std::vector<std::vector<std::string>>& references, const RougeOptions& opts = {});

} // namespace pillars::metrics
