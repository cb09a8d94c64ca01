// learn_bpe: subword-nmt's algorithm with exact, incremental pair statistics; see bpe.h.
//
// State: every distinct word as a sequence of symbol ids with its count; for every adjacent
// symbol pair its total count (`stats`) and the words it occurs in (`where`, which may hold stale
// or repeated entries: a word is re-checked when it is visited); a max-heap of (count, pair)
// entries with lazy deletion (an entry is used only if its count is still the pair's count).
// A merge visits only the words that hold the pair, rewrites them, and applies the net change
// of every pair count in those words, pushing a fresh heap entry for each pair that changed.
#include <algorithm>
#include <queue>

#include "text/bpe.h"
#include "text/unicode.h"

namespace pillars::text {

namespace {

uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
int32_t first(uint64_t k) { return int32_t(k >> 32); }
int32_t second(uint64_t k) { return int32_t(k & 0xFFFFFFFFu); }

class Learner {
 public:
  explicit Learner(const WordCounts& counts) : heap_(HeapLess{&symbols_}) {
    // Sorted by word so that the symbol ids, and so everything after, do not depend on the hash
    // map's order (the result would not either, but a reproducible run is easier to debug).
    std::vector<std::pair<std::string, int64_t>> vocab(counts.begin(), counts.end());
    std::sort(vocab.begin(), vocab.end());
    for (const auto& [word, count] : vocab) {
      if (word.empty() || count <= 0) continue;
      std::u32string cps = utf8_decode(word);
      std::vector<int32_t> syms;
      syms.reserve(cps.size());
      for (size_t i = 0; i < cps.size(); ++i) {
        std::string s;
        utf8_append(s, cps[i]);
        if (i + 1 == cps.size()) s += "</w>"; // version 0.2: the end marker joins the last char
        syms.push_back(intern(s));
      }
      words_.push_back(std::move(syms));
      freq_.push_back(count);
    }
    for (int32_t w = 0; w < int32_t(words_.size()); ++w) {
      const auto& syms = words_[w];
      for (size_t i = 0; i + 1 < syms.size(); ++i) {
        uint64_t k = key(syms[i], syms[i + 1]);
        stats_[k] += freq_[w];
        auto& list = where_[k];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    }
    for (const auto& [k, c] : stats_) heap_.push({c, k});
    seen_.assign(words_.size(), -1);
  }

  BpeCodes run(const LearnBpeOptions& o, std::vector<int64_t>* freqs) {
    BpeCodes codes;
    for (int step = 0; step < o.num_merges; ++step) {
      // The best pair: the top heap entry whose count is still current.
      uint64_t best = 0;
      int64_t count = 0;
      bool found = false;
      while (!heap_.empty()) {
        Entry e = heap_.top();
        heap_.pop();
        auto it = stats_.find(e.pair);
        if (it != stats_.end() && it->second == e.count && e.count > 0) {
          best = e.pair;
          count = e.count;
          found = true;
          break;
        }
      }
      if (!found || count < o.min_frequency) break; // "no pair has frequency >= min_frequency"
      codes.merges.emplace_back(symbols_[first(best)], symbols_[second(best)]);
      if (freqs) freqs->push_back(count);
      merge(best, step);
    }
    return codes;
  }

 private:
  struct Entry {
    int64_t count;
    uint64_t pair;
  };
  // Max-heap order: (count, first symbol, second symbol), strings compared bytewise, which for
  // UTF-8 is code point order: subword-nmt's max(stats, key=lambda x: (stats[x], x)).
  struct HeapLess {
    const std::vector<std::string>* symbols;
    bool operator()(const Entry& x, const Entry& y) const {
      if (x.count != y.count) return x.count < y.count;
      if (x.pair == y.pair) return false;
      const std::string& xa = (*symbols)[first(x.pair)];
      const std::string& ya = (*symbols)[first(y.pair)];
      if (int c = xa.compare(ya)) return c < 0;
      return (*symbols)[second(x.pair)] < (*symbols)[second(y.pair)];
    }
  };

  int32_t intern(const std::string& s) {
    auto [it, inserted] = symbol_id_.try_emplace(s, int32_t(symbols_.size()));
    if (inserted) symbols_.push_back(s);
    return it->second;
  }

  void merge(uint64_t pair, int step) {
    const int32_t a = first(pair), b = second(pair);
    const int32_t ab = intern(symbols_[a] + symbols_[b]);
    std::vector<int32_t> list = std::move(where_[pair]);
    where_.erase(pair);
    delta_.clear();
    std::vector<int32_t> merged;
    for (int32_t w : list) {
      if (seen_[w] == step) continue; // listed twice
      seen_[w] = step;
      std::vector<int32_t>& syms = words_[w];
      // Replace every occurrence, left to right (replace_pair's regex substitution).
      merged.clear();
      bool changed = false;
      for (size_t i = 0; i < syms.size();) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          merged.push_back(ab);
          i += 2;
          changed = true;
        } else {
          merged.push_back(syms[i++]);
        }
      }
      if (!changed) continue; // a stale index entry
      const int64_t f = freq_[w];
      for (size_t i = 0; i + 1 < syms.size(); ++i) delta_[key(syms[i], syms[i + 1])] -= f;
      for (size_t i = 0; i + 1 < merged.size(); ++i) {
        uint64_t k = key(merged[i], merged[i + 1]);
        delta_[k] += f;
        if (merged[i] == ab || merged[i + 1] == ab) {
          auto& l = where_[k];
          if (l.empty() || l.back() != w) l.push_back(w);
        }
      }
      syms.swap(merged);
    }
    for (const auto& [k, d] : delta_) {
      if (d == 0) continue;
      int64_t& c = stats_[k];
      c += d;
      if (c > 0)
        heap_.push({c, k});
      else
        stats_.erase(k);
    }
  }

  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int32_t> symbol_id_;
  std::vector<std::vector<int32_t>> words_;
  std::vector<int64_t> freq_;
  std::unordered_map<uint64_t, int64_t> stats_;
  std::unordered_map<uint64_t, std::vector<int32_t>> where_;
  std::unordered_map<uint64_t, int64_t> delta_;
  std::vector<int> seen_;
  std::priority_queue<Entry, std::vector<Entry>, HeapLess> heap_;
};

} // namespace

BpeCodes learn_bpe(const WordCounts& counts, const LearnBpeOptions& options, std::vector<int64_t>* frequencies) {
  Learner learner(counts);
  return learner.run(options, frequencies);
}

} // namespace pillars::text
