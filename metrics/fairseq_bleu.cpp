// fairseq's tokenized BLEU (see fairseq_bleu.h). Follows libbleu.cpp's counting: trim, then per
// order n count hypothesis n-grams (the total) and matches clipped by the reference's counts.
// libbleu identifies an n-gram by a 64-bit FNV hash of its ids; we compare the ids themselves,
// which differs only if two different n-grams collided in that hash.
#include "metrics/fairseq_bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "base/error.h"
#include "metrics/unicode.h"

namespace pillars::metrics {
namespace {

// Drop leading pads; then trailing eos/pads, but never the first remaining token (libbleu's
// rtrim stops at index 0).
std::span<const std::int32_t> trim(std::span<const std::int32_t> s, int pad, int eos) {
  std::size_t start = 0;
  while (start < s.size() && s[start] == pad) ++start;
  s = s.subspan(start);
  if (s.empty()) return s;
  std::size_t end = s.size() - 1;
  while (end > 0 && (s[end] == eos || s[end] == pad)) --end;
  return s.first(end + 1);
}

void add_ngrams(std::size_t& total, std::size_t& match, std::size_t n, std::span<const std::int32_t> ref,
                std::span<const std::int32_t> hyp) {
  if (hyp.size() < n) return;
  total += hyp.size() - n + 1;
  if (ref.size() < n) return;
  std::map<std::vector<std::int32_t>, std::size_t> count;
  for (std::size_t i = 0; i + n <= hyp.size(); ++i) ++count[{hyp.begin() + i, hyp.begin() + i + n}];
  for (std::size_t i = 0; i + n <= ref.size(); ++i) {
    auto it = count.find({ref.begin() + i, ref.begin() + i + n});
    if (it != count.end() && it->second > 0) {
      ++match;
      --it->second;
    }
  }
}

std::string fixed(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

} // namespace

FairseqBleu::FairseqBleu(int pad, int eos, int unk) : pad_(pad), eos_(eos), unk_(unk) { reset(); }

void FairseqBleu::reset() {
  reflen_ = predlen_ = 0;
  match_ = {};
  count_ = {};
  dict_ = {{"<s>", 0}, {"<pad>", pad_}, {"</s>", eos_}, {"<unk>", unk_}};
}

void FairseqBleu::add(std::span<const std::int32_t> ref_in, std::span<const std::int32_t> hyp_in) {
  for (auto t : ref_in)
    if (t < 0) throw InputError(str_cat("fairseq BLEU: negative token id ", t, " in a reference"));
  // Unknown words in the reference never match (fairseq sets them to -999).
  std::vector<std::int32_t> ref(ref_in.begin(), ref_in.end());
  for (auto& t : ref)
    if (t == unk_) t = -999;
  const auto r = trim(ref, pad_, eos_);
  const auto h = trim(hyp_in, pad_, eos_);
  reflen_ += r.size();
  predlen_ += h.size();
  for (std::size_t n = 1; n <= 4; ++n) add_ngrams(count_[n - 1], match_[n - 1], n, r, h);
}

std::int32_t FairseqBleu::word_id(const std::string& w) {
  auto [it, inserted] = dict_.try_emplace(w, 0);
  if (inserted) {
    // Fresh ids above every special id, so no ordinary word can collide with pad/eos/unk.
    static constexpr std::int32_t kFirst = 1 << 20;
    it->second = kFirst + static_cast<std::int32_t>(dict_.size());
  }
  return it->second;
}

void FairseqBleu::add_tokens(std::string_view ref, std::string_view hyp) {
  auto encode = [&](std::string_view line) {
    std::vector<std::int32_t> ids;
    for (const std::string& w : split_whitespace(line)) ids.push_back(word_id(w));
    ids.push_back(eos_);
    return ids;
  };
  add(encode(ref), encode(hyp));
}

std::array<double, 4> FairseqBleu::precision() const {
  std::array<double, 4> p{};
  for (int n = 0; n < 4; ++n)
    p[n] = count_[n] > 0 ? static_cast<double>(match_[n]) / static_cast<double>(count_[n]) : 0.0;
  return p;
}

double FairseqBleu::brevity() const {
  if (predlen_ == 0) return 0.0; // fairseq divides by zero here; an empty corpus scores 0
  const double r = static_cast<double>(reflen_) / static_cast<double>(predlen_);
  return std::min(1.0, std::exp(1.0 - r));
}

double FairseqBleu::score(int order) const {
  if (order < 1 || order > 4) throw InputError(str_cat("fairseq BLEU: order must be 1..4, got ", order));
  const auto p = precision();
  double psum = 0.0;
  for (int n = 0; n < order; ++n) psum += p[n] > 0 ? std::log(p[n]) : -std::numeric_limits<double>::infinity();
  return brevity() * std::exp(psum / order) * 100.0;
}

std::string FairseqBleu::result_string(int order) const {
  // "BLEU{} = {:2.2f}, {:2.1f}/.../{:2.1f} (BP={:.3f}, ratio={:.3f}, syslen={}, reflen={})"
  const auto p = precision();
  std::string s = "BLEU" + std::to_string(order) + " = " + fixed(score(order), "%2.2f") + ", ";
  for (int n = 0; n < order; ++n) {
    if (n) s += '/';
    s += fixed(p[n] * 100.0, "%2.1f");
  }
  const double ratio = reflen_ ? static_cast<double>(predlen_) / static_cast<double>(reflen_) : 0.0;
  s += " (BP=" + fixed(brevity(), "%.3f") + ", ratio=" + fixed(ratio, "%.3f") + ", syslen=" + std::to_string(predlen_) +
       ", reflen=" + std::to_string(reflen_) + ")";
  return s;
}

double fairseq_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  if (hyps.size() != refs.size())
    throw InputError(str_cat("fairseq_bleu: ", hyps.size(), " hypotheses but ", refs.size(), " references"));
  FairseqBleu b;
  for (std::size_t i = 0; i < hyps.size(); ++i) b.add_tokens(refs[i], hyps[i]);
  return b.score();
}

} // namespace pillars::metrics
