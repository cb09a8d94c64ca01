// rouge-score's RougeScorer (see rouge.h for the definitions).
#include "metrics/rouge.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "metrics/porter.h"
#include "metrics/unicode.h"

namespace pillars::metrics {
namespace {

// F = 2PR / (P + R), evaluated in rouge-score's order ((2P)R)/(P+R).
double fmeasure(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0.0; }

RougeScore make_score(double p, double r) { return {p, r, fmeasure(p, r)}; }

std::map<std::vector<std::string>, int> ngram_counts(const std::vector<std::string>& tokens, int n) {
  std::map<std::vector<std::string>, int> counts;
  for (std::size_t i = 0; i + n <= tokens.size(); ++i) ++counts[{tokens.begin() + i, tokens.begin() + i + n}];
  return counts;
}

// (rows+1) x (cols+1) LCS length table, row-major.
std::vector<int> lcs_table(const std::vector<std::string>& ref, const std::vector<std::string>& can) {
  const std::size_t rows = ref.size(), cols = can.size();
  std::vector<int> t((rows + 1) * (cols + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> int& { return t[i * (cols + 1) + j]; };
  for (std::size_t i = 1; i <= rows; ++i)
    for (std::size_t j = 1; j <= cols; ++j)
      at(i, j) = ref[i - 1] == can[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
  return t;
}

std::vector<std::vector<std::string>> tokenize_lines(std::string_view text, bool stem) {
  std::vector<std::vector<std::string>> sents;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(start, nl - start);
    if (!line.empty()) sents.push_back(rouge_tokenize(line, stem)); // empty lines are dropped
    start = nl + 1;
  }
  return sents;
}

} // namespace

std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer) {
  std::vector<std::string> tokens;
  std::string cur;
  std::u32string lowered;
  auto flush = [&] {
    if (cur.empty()) return;
    tokens.push_back(use_stemmer && cur.size() > 3 ? porter_stem(cur) : cur);
    cur.clear();
  };
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = pos;
    const char32_t c = utf8_next(text, pos);
    lowered.clear();
    if (pos - start == 1 && c >= 0x80)
      lowered += c; // an undecodable byte: a separator, like any non-ASCII character
    else
      append_lower(lowered, c);
    for (char32_t l : lowered) {
      if ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9'))
        cur += static_cast<char>(l);
      else
        flush();
    }
  }
  flush();
  // rouge-score finally keeps only tokens matching ^[a-z0-9]+$; stems of [a-z0-9] words always do,
  // so only empty stems would go (none occur, but keep the rule).
  std::erase_if(tokens, [](const std::string& t) { return t.empty(); });
  return tokens;
}

RougeScore rouge_n(const std::vector<std::string>& target, const std::vector<std::string>& prediction, int n) {
  if (n < 1) throw InputError(str_cat("rouge_n: n must be >= 1, got ", n));
  const auto t = ngram_counts(target, n);
  const auto p = ngram_counts(prediction, n);
  long long overlap = 0, t_total = 0, p_total = 0;
  for (const auto& [g, c] : t) {
    t_total += c;
    if (auto it = p.find(g); it != p.end()) overlap += std::min(c, it->second);
  }
  for (const auto& [g, c] : p) p_total += c;
  return make_score(static_cast<double>(overlap) / static_cast<double>(std::max(p_total, 1LL)),
                    static_cast<double>(overlap) / static_cast<double>(std::max(t_total, 1LL)));
}

RougeScore rouge_l(const std::vector<std::string>& target, const std::vector<std::string>& prediction) {
  if (target.empty() || prediction.empty()) return {};
  const auto t = lcs_table(target, prediction);
  const double lcs = t.back();
  return make_score(lcs / static_cast<double>(prediction.size()), lcs / static_cast<double>(target.size()));
}

std::vector<std::size_t> lcs_indices(const std::vector<std::string>& ref, const std::vector<std::string>& can) {
  const auto t = lcs_table(ref, can);
  const std::size_t cols = can.size() + 1;
  auto at = [&](std::size_t i, std::size_t j) { return t[i * cols + j]; };
  // Walk back from the corner: take a match when the tokens agree, else move left only if that
  // cell is strictly larger than the one above (rouge-score's _backtrack_norec tie rule).
  std::vector<std::size_t> lcs;
  std::size_t i = ref.size(), j = can.size();
  while (i > 0 && j > 0) {
    if (ref[i - 1] == can[j - 1]) {
      lcs.push_back(i - 1);
      --i, --j;
    } else if (at(i, j - 1) > at(i - 1, j)) {
      --j;
    } else {
      --i;
    }
  }
  std::reverse(lcs.begin(), lcs.end());
  return lcs;
}

RougeScore rouge_lsum(const std::vector<std::vector<std::string>>& ref_sents,
                      const std::vector<std::vector<std::string>>& can_sents) {
  if (ref_sents.empty() || can_sents.empty()) return {};
  std::size_t m = 0, n = 0;
  std::unordered_map<std::string, long long> cnt_r, cnt_c;
  for (const auto& s : ref_sents) {
    m += s.size();
    for (const auto& t : s) ++cnt_r[t];
  }
  for (const auto& s : can_sents) {
    n += s.size();
    for (const auto& t : s) ++cnt_c[t];
  }
  if (m == 0 || n == 0) return {};
  long long hits = 0;
  for (const auto& r : ref_sents) {
    // Union over candidate sentences of the reference positions on their LCS, in order.
    std::vector<std::size_t> uni;
    for (const auto& c : can_sents) {
      const auto idx = lcs_indices(r, c);
      uni.insert(uni.end(), idx.begin(), idx.end());
    }
    std::sort(uni.begin(), uni.end());
    uni.erase(std::unique(uni.begin(), uni.end()), uni.end());
    // ROUGE-1.5.5's guard against double counting: a token is a hit only while both sides still
    // have an unused occurrence of it.
    for (std::size_t i : uni) {
      const std::string& tok = r[i];
      auto& c = cnt_c[tok];
      auto& rr = cnt_r[tok];
      if (c > 0 && rr > 0) {
        ++hits;
        --c;
        --rr;
      }
    }
  }
  return make_score(static_cast<double>(hits) / static_cast<double>(n),
                    static_cast<double>(hits) / static_cast<double>(m));
}

RougeScores rouge_score(std::string_view target, std::string_view prediction, const RougeOptions& opts) {
  const auto t = rouge_tokenize(target, opts.use_stemmer);
  const auto p = rouge_tokenize(prediction, opts.use_stemmer);
  RougeScores s;
  s.rouge1 = rouge_n(t, p, 1);
  s.rouge2 = rouge_n(t, p, 2);
  s.rougeL = rouge_l(t, p);
  s.rougeLsum = rouge_lsum(tokenize_lines(target, opts.use_stemmer), tokenize_lines(prediction, opts.use_stemmer));
  return s;
}

RougeScores rouge_score_multi(const std::vector<std::string>& targets, std::string_view prediction,
                              const RougeOptions& opts) {
  if (targets.empty()) throw InputError("rouge_score_multi: no targets");
  RougeScores best = rouge_score(targets[0], prediction, opts);
  for (std::size_t k = 1; k < targets.size(); ++k) {
    const RougeScores s = rouge_score(targets[k], prediction, opts);
    // Per type, the first target with the strictly largest F (numpy argmax).
    if (s.rouge1.fmeasure > best.rouge1.fmeasure) best.rouge1 = s.rouge1;
    if (s.rouge2.fmeasure > best.rouge2.fmeasure) best.rouge2 = s.rouge2;
    if (s.rougeL.fmeasure > best.rougeL.fmeasure) best.rougeL = s.rougeL;
    if (s.rougeLsum.fmeasure > best.rougeLsum.fmeasure) best.rougeLsum = s.rougeLsum;
  }
  return best;
}

RougeCorpus corpus_rouge(const std::vector<std::string>& predictions,
                         const std::vector<std::vector<std::string>>& references, const RougeOptions& opts) {
  if (predictions.empty()) throw InputError("corpus_rouge: no predictions");
  if (references.empty()) throw InputError("corpus_rouge: no reference streams");
  for (std::size_t k = 0; k < references.size(); ++k)
    if (references[k].size() != predictions.size())
      throw InputError(str_cat("corpus_rouge: ", predictions.size(), " predictions but reference stream ", k, " has ",
                               references[k].size(), " lines"));
  RougeCorpus c;
  auto add = [](RougeScore& acc, const RougeScore& s) {
    acc.precision += s.precision;
    acc.recall += s.recall;
    acc.fmeasure += s.fmeasure;
  };
  std::vector<std::string> targets(references.size());
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    for (std::size_t k = 0; k < references.size(); ++k) targets[k] = references[k][i];
    const RougeScores s = rouge_score_multi(targets, predictions[i], opts);
    add(c.mean.rouge1, s.rouge1);
    add(c.mean.rouge2, s.rouge2);
    add(c.mean.rougeL, s.rougeL);
    add(c.mean.rougeLsum, s.rougeLsum);
  }
  c.n = predictions.size();
  const double n = static_cast<double>(c.n);
  for (RougeScore* r : {&c.mean.rouge1, &c.mean.rouge2, &c.mean.rougeL, &c.mean.rougeLsum}) {
    r->precision /= n;
    r->recall /= n;
    r->fmeasure /= n;
  }
  return c;
}

} // namespace pillars::metrics
