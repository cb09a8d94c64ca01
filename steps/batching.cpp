// Batching by token budget; see batching.h.
#include "steps/batching.h"

#include <algorithm>
#include <map>
#include <random>
#include <utility>

#include "base/error.h"

namespace pillars::steps {

namespace {

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// A std::mt19937_64 seeded from (seed, epoch, salt): one reproducible stream per use.
std::mt19937_64 rng_for(uint64_t seed, int64_t epoch, uint64_t salt) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(epoch),
                    static_cast<uint32_t>(salt)};
  return std::mt19937_64(seq);
}

// Fisher–Yates with our own index draw: std::shuffle's use of the engine is implementation
// defined, this is the same on every standard library.
template <class T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(v[i - 1], v[j]);
  }
}

} // namespace

Bucketing::Bucketing(std::vector<int64_t> src_lengths, std::vector<int64_t> tgt_lengths, const BatchingOptions& options)
    : src_(std::move(src_lengths)), tgt_(std::move(tgt_lengths)), options_(options) {
  PILLARS_CHECK(src_.empty() || src_.size() == tgt_.size(), "batching: ", src_.size(), " source lengths for ",
                tgt_.size(), " targets");
  PILLARS_CHECK(options_.max_tokens >= 1 && options_.length_multiple >= 1,
                "batching: max_tokens and length_multiple must be >= 1");
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> by_shape; // (Tt, Ts) → sentences
  for (size_t i = 0; i < tgt_.size(); ++i) {
    const int64_t Ts = src_.empty() ? 0 : round_up(src_[i], options_.length_multiple);
    const int64_t Tt = round_up(tgt_[i], options_.length_multiple);
    if (std::max(Ts, Tt) > options_.max_tokens)
      throw InputError(str_cat("batching: sentence ", i, " has ", std::max(Ts, Tt),
                               " padded tokens, more than max_tokens = ", options_.max_tokens,
                               " (raise data.max_tokens or lower data.max_source_len/max_target_len)"));
    by_shape[{Tt, Ts}].push_back(static_cast<int64_t>(i));
  }
  for (auto& [shape, members] : by_shape) groups_.push_back(std::move(members));
}

std::vector<Batch> Bucketing::cut(const std::vector<std::vector<int64_t>>& groups) const {
  std::vector<Batch> batches;
  for (const auto& members : groups) {
    if (members.empty()) continue;
    const int64_t first = members.front();
    const int64_t Ts = src_.empty() ? 0 : round_up(src_[first], options_.length_multiple);
    const int64_t Tt = round_up(tgt_[first], options_.length_multiple);
    int64_t per_batch = options_.max_tokens / std::max(Ts, Tt);
    if (options_.max_sentences > 0) per_batch = std::min(per_batch, options_.max_sentences);
    for (size_t at = 0; at < members.size(); at += static_cast<size_t>(per_batch)) {
      Batch b;
      b.Ts = Ts, b.Tt = Tt;
      const size_t end = std::min(members.size(), at + static_cast<size_t>(per_batch));
      b.indices.assign(members.begin() + static_cast<std::ptrdiff_t>(at),
                       members.begin() + static_cast<std::ptrdiff_t>(end));
      batches.push_back(std::move(b));
    }
  }
  return batches;
}

std::vector<Batch> Bucketing::epoch(uint64_t seed, int64_t epoch) const {
  std::mt19937_64 rng = rng_for(seed, epoch, 0x5eed);
  std::vector<std::vector<int64_t>> groups = groups_;
  for (auto& g : groups) shuffle(g, rng);
  std::vector<Batch> batches = cut(groups);
  shuffle(batches, rng);
  return batches;
}

std::vector<Batch> Bucketing::in_order() const { return cut(groups_); }

Seq2SeqBatch make_seq2seq_batch(const std::vector<std::vector<int32_t>>& src,
                                const std::vector<std::vector<int32_t>>& tgt, const Batch& batch, int32_t pad,
                                int32_t eos) {
  Seq2SeqBatch t;
  t.B = static_cast<int64_t>(batch.indices.size()), t.Ts = batch.Ts, t.Tt = batch.Tt;
  t.src_tokens.assign(static_cast<size_t>(t.B * t.Ts), pad);
  t.src_lengths.assign(static_cast<size_t>(t.B), 0);
  t.prev_output_tokens.assign(static_cast<size_t>(t.B * t.Tt), pad);
  t.target.assign(static_cast<size_t>(t.B * t.Tt), pad);
  for (int64_t b = 0; b < t.B; ++b) {
    const auto& s = src[static_cast<size_t>(batch.indices[b])];
    const auto& y = tgt[static_cast<size_t>(batch.indices[b])];
    PILLARS_CHECK(static_cast<int64_t>(s.size()) <= t.Ts && static_cast<int64_t>(y.size()) <= t.Tt && !y.empty(),
                  "make_seq2seq_batch: sentence ", batch.indices[b], " does not fit the batch shape");
    std::copy(s.begin(), s.end(), t.src_tokens.begin() + b * t.Ts);
    t.src_lengths[b] = static_cast<int32_t>(s.size());
    t.prev_output_tokens[b * t.Tt] = eos;
    for (size_t j = 0; j < y.size(); ++j) {
      t.target[b * t.Tt + static_cast<int64_t>(j)] = y[j];
      if (j + 1 < y.size()) t.prev_output_tokens[b * t.Tt + static_cast<int64_t>(j) + 1] = y[j];
    }
    t.target_tokens += static_cast<int64_t>(y.size());
  }
  return t;
}

} // namespace pillars::steps
