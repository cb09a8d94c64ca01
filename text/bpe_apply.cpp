// BpeApplier: apply_bpe.py's segmentation; see bpe.h.
#include <algorithm>
#include <limits>

#include "base/error.h"
#include "text/bpe.h"
#include "text/unicode.h"

namespace pillars::text {

namespace {

uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
constexpr std::string_view kStripChars = "\r\n ";
constexpr std::string_view kEow = "</w>";

} // namespace

BpeApplier::BpeApplier(const BpeCodes& codes, BpeApplyOptions options) : options_(std::move(options)) {
  version_01_ = codes.version_major == 0 && codes.version_minor == 1;
  auto intern = [&](const std::string& s) {
    auto [it, inserted] = symbol_id_.try_emplace(s, int32_t(symbols_.size()));
    if (inserted) symbols_.push_back(s);
    return it->second;
  };
  size_t n = codes.merges.size();
  if (options_.merges >= 0) n = std::min(n, size_t(options_.merges));
  for (size_t r = 0; r < n; ++r) {
    const auto& [a, b] = codes.merges[r];
    int32_t ia = intern(a), ib = intern(b), iab = intern(a + b);
    // A pair listed twice keeps its first (lowest) rank, as apply_bpe.py's dict does.
    rank_and_merged_.try_emplace(key(ia, ib), int32_t(r), iab);
  }
}

const std::vector<std::string>& BpeApplier::encode(const std::string& word) {
  auto hit = cache_.find(word);
  if (hit != cache_.end()) return hit->second;
  std::vector<std::string>& result = cache_[word];

  if (std::find(options_.glossary.begin(), options_.glossary.end(), word) != options_.glossary.end()) {
    result = {word};
    return result;
  }
  std::u32string cps = utf8_decode(word);
  if (cps.size() <= 1) {
    result = {word};
    return result;
  }
  // The word as symbols: its characters, with "</w>" glued to the last one (codes 0.2) or as a
  // symbol of its own (0.1). Strings that never occur in the codes get id -1: they take part in
  // no merge, and keep their text in `text`.
  std::vector<int32_t> ids;
  std::vector<std::string> text;
  auto push = [&](std::string s) {
    auto it = symbol_id_.find(s);
    ids.push_back(it == symbol_id_.end() ? -1 : it->second);
    text.push_back(std::move(s));
  };
  for (size_t i = 0; i < cps.size(); ++i) {
    std::string s;
    utf8_append(s, cps[i]);
    if (i + 1 == cps.size() && !version_01_) s += kEow;
    push(std::move(s));
  }
  if (version_01_) push(std::string(kEow));

  while (ids.size() > 1) {
    // The pair of lowest rank present; then merge all its occurrences left to right (a later
    // one that overlaps a merged one, as in "x x x", is skipped).
    int32_t best_rank = std::numeric_limits<int32_t>::max(), best_merged = -1;
    uint64_t best_key = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i + 1] < 0) continue;
      auto it = rank_and_merged_.find(key(ids[i], ids[i + 1]));
      if (it != rank_and_merged_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_merged = it->second.second;
        best_key = it->first;
      }
    }
    if (best_merged < 0) break;
    size_t out = 0;
    for (size_t i = 0; i < ids.size();) {
      if (i + 1 < ids.size() && ids[i] >= 0 && ids[i + 1] >= 0 && key(ids[i], ids[i + 1]) == best_key) {
        ids[out] = best_merged;
        text[out] = symbols_[best_merged];
        i += 2;
      } else {
        ids[out] = ids[i];
        if (out != i) text[out] = std::move(text[i]);
        ++i;
      }
      ++out;
    }
    ids.resize(out);
    text.resize(out);
  }
  // Don't print end-of-word symbols.
  if (text.back() == kEow) {
    text.pop_back();
  } else if (text.back().ends_with(kEow)) {
    text.back().resize(text.back().size() - kEow.size());
  }
  result = std::move(text);
  return result;
}

// apply_bpe.py's isolate_glossary for every glossary word in turn: a word that contains a
// glossary word (and is not just that word) is cut into the pieces before, the glossary word
// itself, and the pieces after; empty pieces dropped.
std::vector<std::string> BpeApplier::isolate_glossaries(const std::string& word) const {
  std::vector<std::string> segments{word};
  for (const std::string& gloss : options_.glossary) {
    if (gloss.empty()) continue;
    std::vector<std::string> next;
    for (const std::string& seg : segments) {
      if (seg == gloss || seg.find(gloss) == std::string::npos) {
        next.push_back(seg);
        continue;
      }
      size_t start = 0, pos;
      while ((pos = seg.find(gloss, start)) != std::string::npos) {
        if (pos > start) next.push_back(seg.substr(start, pos - start));
        next.push_back(gloss);
        start = pos + gloss.size();
      }
      if (start < seg.size()) next.push_back(seg.substr(start));
    }
    segments.swap(next);
  }
  return segments;
}

std::vector<std::string> BpeApplier::apply_word(const std::string& word) {
  std::vector<std::string> units;
  if (options_.glossary.empty()) {
    units = encode(word);
  } else {
    for (const std::string& seg : isolate_glossaries(word)) {
      const auto& e = encode(seg);
      units.insert(units.end(), e.begin(), e.end());
    }
  }
  for (size_t i = 0; i + 1 < units.size(); ++i) units[i] += options_.separator;
  return units;
}

std::string BpeApplier::apply_line(std::string_view line) {
  std::string out;
  out.reserve(line.size() + line.size() / 4);
  size_t lead = line.find_first_not_of(kStripChars);
  if (lead == std::string_view::npos) return std::string(line); // whitespace only: unchanged
  out.append(line.substr(0, lead));
  size_t last = line.find_last_not_of(kStripChars);
  std::string_view body = line.substr(lead, last + 1 - lead);
  bool first_unit = true;
  size_t start = 0;
  while (start <= body.size()) {
    size_t sp = body.find(' ', start);
    if (sp == std::string_view::npos) sp = body.size();
    if (sp > start) { // eliminate double spaces
      for (std::string& unit : apply_word(std::string(body.substr(start, sp - start)))) {
        if (!first_unit) out += ' ';
        out += unit;
        first_unit = false;
      }
    }
    start = sp + 1;
  }
  out.append(line.substr(last + 1));
  return out;
}

} // namespace pillars::text
