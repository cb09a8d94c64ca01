// sacreBLEU 2.x corpus BLEU: segment statistics, the score from statistics, the score line.
// The arithmetic follows sacreBLEU's BLEU.compute_bleu operation for operation (same order of
// multiplications and divisions in double), so scores agree to the last bit or so; the one
// difference is that the mean of the log precisions is summed left to right (as Python <= 3.11's
// sum() does; 3.12's compensated sum() can differ in the last ulp).
#include "metrics/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "base/error.h"
#include "metrics/unicode.h"

namespace pillars::metrics {
namespace {

using NgramCounts = std::unordered_map<std::string, std::int64_t>;

// All n-grams of orders 1..max_order; an n-gram's key is its tokens joined by single spaces
// (tokens contain no whitespace, so keys of different n-grams differ).
NgramCounts count_ngrams(const std::vector<std::string>& tokens, int max_order) {
  NgramCounts counts;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string key;
    for (int n = 1; n <= max_order && i + n <= tokens.size(); ++n) {
      if (n > 1) key += ' ';
      key += tokens[i + n - 1];
      ++counts[key];
    }
  }
  return counts;
}

int order_of(const std::string& key) {
  int n = 1;
  for (char c : key) n += (c == ' ');
  return n;
}

// sacreBLEU's _get_closest_ref_len: smallest |hyp - ref|, the shorter reference on a tie.
std::int64_t closest_ref_len(std::int64_t hyp_len, const std::vector<std::int64_t>& ref_lens) {
  std::int64_t best_diff = -1, best_len = -1;
  for (std::int64_t r : ref_lens) {
    const std::int64_t diff = std::llabs(hyp_len - r);
    if (best_diff == -1 || diff < best_diff) {
      best_diff = diff;
      best_len = r;
    } else if (diff == best_diff && r < best_len) {
      best_len = r;
    }
  }
  return best_len;
}

double smooth_value_or_default(const BleuOptions& o) {
  if (o.smooth_value) return *o.smooth_value;
  return o.smooth == BleuSmooth::kFloor ? 0.1 : 1.0; // floor: 0.1, add-k: 1
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void check_order(const BleuOptions& opts) {
  if (opts.max_ngram_order < 1)
    throw InputError(str_cat("BLEU: max_ngram_order must be >= 1, got ", opts.max_ngram_order));
}

} // namespace

BleuOptions sentence_bleu_options() {
  BleuOptions o;
  o.effective_order = true;
  return o;
}

BleuStats& BleuStats::operator+=(const BleuStats& o) {
  if (counts.size() < o.counts.size()) counts.resize(o.counts.size(), 0);
  if (totals.size() < o.totals.size()) totals.resize(o.totals.size(), 0);
  sys_len += o.sys_len;
  ref_len += o.ref_len;
  for (std::size_t n = 0; n < o.counts.size(); ++n) counts[n] += o.counts[n];
  for (std::size_t n = 0; n < o.totals.size(); ++n) totals[n] += o.totals[n];
  return *this;
}

BleuStats bleu_segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, const BleuOptions& opts) {
  check_order(opts);
  const int max_order = opts.max_ngram_order;
  // Reference side: per n-gram the largest count over the references, and every length.
  NgramCounts ref_max;
  std::vector<std::int64_t> ref_lens;
  for (std::string_view ref : refs) {
    if (ref.empty()) continue; // sacreBLEU drops "" references (variable number of references)
    const auto tokens = split_whitespace(bleu_preprocess(ref, opts));
    ref_lens.push_back(static_cast<std::int64_t>(tokens.size()));
    for (auto& [key, count] : count_ngrams(tokens, max_order)) {
      auto& m = ref_max[key];
      if (count > m) m = count;
    }
  }
  if (ref_lens.empty()) throw InputError("BLEU: a segment has no non-empty reference");

  const auto tokens = split_whitespace(bleu_preprocess(hyp, opts));
  BleuStats s;
  s.sys_len = static_cast<std::int64_t>(tokens.size());
  s.ref_len = closest_ref_len(s.sys_len, ref_lens);
  s.counts.assign(max_order, 0);
  s.totals.assign(max_order, 0);
  // Clipped matches: each hypothesis n-gram counts at most as often as in the best reference.
  for (const auto& [key, count] : count_ngrams(tokens, max_order)) {
    const int n = order_of(key) - 1;
    s.totals[n] += count;
    if (auto it = ref_max.find(key); it != ref_max.end()) s.counts[n] += std::min(count, it->second);
  }
  return s;
}

BleuResult compute_bleu(const BleuStats& stats, const BleuOptions& opts) {
  check_order(opts);
  const int max_order = opts.max_ngram_order;
  BleuResult r;
  r.counts = stats.counts;
  r.totals = stats.totals;
  r.counts.resize(max_order, 0);
  r.totals.resize(max_order, 0);
  r.sys_len = stats.sys_len;
  r.ref_len = stats.ref_len;
  r.ratio = r.ref_len ? static_cast<double>(r.sys_len) / static_cast<double>(r.ref_len) : 0.0;

  // Brevity penalty: only a hypothesis shorter than the reference is penalized.
  if (r.sys_len < r.ref_len)
    r.bp = r.sys_len > 0 ? std::exp(1.0 - static_cast<double>(r.ref_len) / static_cast<double>(r.sys_len)) : 0.0;
  else
    r.bp = 1.0;

  r.precisions.assign(max_order, 0.0);
  bool any_match = false;
  for (auto c : r.counts) any_match |= (c != 0);
  if (!any_match) return r; // sacreBLEU #141: no match at all is 0 whatever the smoothing

  const double k = smooth_value_or_default(opts);
  double smooth_mteval = 1.0;
  int eff_order = max_order;
  for (int n = 1; n <= max_order; ++n) {
    double correct = static_cast<double>(r.counts[n - 1]);
    double total = static_cast<double>(r.totals[n - 1]);
    if (opts.smooth == BleuSmooth::kAddK && n > 1) { // Lin & Och: add k to both, orders >= 2
      correct += k;
      total += k;
    }
    if (total == 0) break; // no hypothesis n-grams of this order (or longer)
    if (opts.effective_order) eff_order = n;
    if (correct == 0) {
      if (opts.smooth == BleuSmooth::kExp) { // NIST/mteval: the k-th zero gets 1 / (2^k total)
        smooth_mteval *= 2;
        r.precisions[n - 1] = 100.0 / (smooth_mteval * total);
      } else if (opts.smooth == BleuSmooth::kFloor) {
        r.precisions[n - 1] = 100.0 * k / total;
      }
    } else {
      r.precisions[n - 1] = 100.0 * correct / total;
    }
  }
  // Geometric mean of the precisions; log 0 is floored at -9999999999 (sacreBLEU's my_log).
  double log_sum = 0.0;
  for (int n = 0; n < eff_order; ++n) log_sum += r.precisions[n] == 0.0 ? -9999999999.0 : std::log(r.precisions[n]);
  r.score = r.bp * std::exp(log_sum / eff_order);
  return r;
}

std::string BleuResult::format(int width) const {
  std::string s = "BLEU = " + fixed(score, width) + " ";
  for (std::size_t n = 0; n < precisions.size(); ++n) {
    if (n) s += '/';
    s += fixed(precisions[n], 1);
  }
  s += " (BP = " + fixed(bp, 3) + " ratio = " + fixed(ratio, 3) + " hyp_len = " + std::to_string(sys_len) +
       " ref_len = " + std::to_string(ref_len) + ")";
  return s;
}

BleuResult corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                       const BleuOptions& opts) {
  if (hyps.empty()) throw InputError("corpus_bleu: no hypotheses");
  if (refs.empty()) throw InputError("corpus_bleu: no reference streams");
  for (std::size_t k = 0; k < refs.size(); ++k)
    if (refs[k].size() != hyps.size())
      throw InputError(str_cat("corpus_bleu: ", hyps.size(), " hypotheses but reference stream ", k, " has ",
                               refs[k].size(), " lines"));
  BleuStats total;
  total.counts.assign(std::max(opts.max_ngram_order, 0), 0);
  total.totals.assign(std::max(opts.max_ngram_order, 0), 0);
  std::vector<std::string_view> seg_refs(refs.size());
  for (std::size_t i = 0; i < hyps.size(); ++i) {
    for (std::size_t k = 0; k < refs.size(); ++k) seg_refs[k] = refs[k][i];
    try {
      total += bleu_segment_stats(hyps[i], seg_refs, opts);
    } catch (const InputError& e) {
      throw InputError(str_cat("corpus_bleu: line ", i + 1, ": ", e.what()));
    }
  }
  return compute_bleu(total, opts);
}

BleuResult sentence_bleu(std::string_view hyp, const std::vector<std::string>& refs, const BleuOptions& opts) {
  if (refs.empty()) throw InputError("sentence_bleu: no references");
  std::vector<std::string_view> views(refs.begin(), refs.end());
  return compute_bleu(bleu_segment_stats(hyp, views, opts), opts);
}

std::string bleu_signature(const BleuOptions& opts, int nrefs) {
  std::string smooth;
  switch (opts.smooth) {
    case BleuSmooth::kNone:
      smooth = "none";
      break;
    case BleuSmooth::kExp:
      smooth = "exp";
      break;
    case BleuSmooth::kFloor:
      smooth = "floor[" + fixed(smooth_value_or_default(opts), 2) + "]";
      break;
    case BleuSmooth::kAddK:
      smooth = "add-k[" + fixed(smooth_value_or_default(opts), 2) + "]";
      break;
  }
  const char* tok = opts.tokenize == BleuTokenizer::k13a    ? "13a"
                    : opts.tokenize == BleuTokenizer::kChar ? "char"
                                                            : "none";
  return str_cat("nrefs:", nrefs < 0 ? std::string("var") : std::to_string(nrefs),
                 "|case:", opts.lowercase ? "lc" : "mixed", "|eff:", opts.effective_order ? "yes" : "no", "|tok:", tok,
                 "|smooth:", smooth);
}

} // namespace pillars::metrics
