// Batching by a token budget, with length buckets and seeded shuffling, and the padded tensors of
// a batch.
//
//   Bucketing b(src_lengths, tgt_lengths, {.max_tokens = 4096});
//   for (const Batch& batch : b.epoch(seed, epoch)) {       // a fresh order every epoch
//     Seq2SeqBatch t = make_seq2seq_batch(corpus, batch, pad, eos);
//     ...
//   }
//
// Sentences are grouped by their padded shape: source and target lengths rounded up to a multiple
// of `length_multiple` (8). Each group is cut into batches of B = ⌊max_tokens / max(Ts, Tt)⌋
// sentences (fairseq's --max-tokens counts the padded size of the longer side), so a batch's
// padded (B, Ts, Tt) comes from a small set of shapes — the trainer keeps one compiled graph per
// shape. Every epoch shuffles the sentences inside each group and then the order of the batches,
// both from (seed, epoch): the same seed gives the same batches on every machine.
#pragma once
#include <cstdint>
#include <vector>

namespace pillars::steps {

struct BatchingOptions {
  int64_t max_tokens = 4096;   // B · max(Ts, Tt) ≤ max_tokens
  int64_t length_multiple = 8; // padded lengths are multiples of this
  int64_t max_sentences = 0;   // 0 = no limit on B
};

struct Batch {
  std::vector<int64_t> indices; // sentences of the corpus, in batch-row order
  int64_t Ts = 0, Tt = 0;       // padded lengths (Ts = 0 for a target-only corpus)
};

class Bucketing {
 public:
  // Lengths count every token including eos. Sentences longer than max_tokens alone are an error
  // (InputError naming the sentence); filter them before.
  Bucketing(std::vector<int64_t> src_lengths, std::vector<int64_t> tgt_lengths, const BatchingOptions& options);
  // The batches of one epoch, in training order.
  std::vector<Batch> epoch(uint64_t seed, int64_t epoch) const;
  // The same batches in a fixed order (no shuffling): validation and test.
  std::vector<Batch> in_order() const;
  int64_t sentences() const { return static_cast<int64_t>(tgt_.size()); }

 private:
  std::vector<Batch> cut(const std::vector<std::vector<int64_t>>& groups) const;
  std::vector<int64_t> src_, tgt_;
  BatchingOptions options_;
  std::vector<std::vector<int64_t>> groups_; // sentence indices per padded shape, ascending
};

// The tensors of a translation/summarization batch (right-padded with pad):
//   src_tokens         (B, Ts)   the source sentence, eos last
//   src_lengths        (B)
//   prev_output_tokens (B, Tt)   eos, y_1, …, y_{n−1}   (teacher forcing: the target shifted right)
//   target             (B · Tt)  y_1, …, y_{n−1}, eos
//   target_tokens      number of non-pad targets
struct Seq2SeqBatch {
  int64_t B = 0, Ts = 0, Tt = 0;
  std::vector<int32_t> src_tokens, src_lengths, prev_output_tokens, target;
  int64_t target_tokens = 0;
};

Seq2SeqBatch make_seq2seq_batch(const std::vector<std::vector<int32_t>>& src,
                                const std::vector<std::vector<int32_t>>& tgt, const Batch& batch, int32_t pad,
                                int32_t eos);

} // namespace pillars::steps
