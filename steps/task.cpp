// The two training tasks; see task.h.
#include "steps/task.h"

#include <algorithm>
#include <random>

#include "base/error.h"
#include "base/special_tokens.h"

namespace pillars::steps {

namespace {

std::vector<int64_t> lengths_of(const std::vector<std::vector<int32_t>>& lists) {
  std::vector<int64_t> n;
  for (const auto& l : lists) n.push_back(static_cast<int64_t>(l.size()));
  return n;
}

class Seq2SeqTask : public TrainingTask {
 public:
  Seq2SeqTask(const TransformerConfig& cfg, ParamStore& params, const Seq2SeqData& data, int64_t max_tokens,
              StepRecipes recipes)
      : data_(data),
        pad_(static_cast<int32_t>(cfg.pad_id)),
        max_tokens_(max_tokens),
        steps_(cfg, params, std::move(recipes)),
        train_(lengths_of(data.train_src), lengths_of(data.train_tgt), {.max_tokens = max_tokens}),
        batches_per_epoch_(static_cast<int64_t>(train_.in_order().size())) {}

  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  std::vector<Batch> epoch(uint64_t seed, int64_t epoch) const override { return train_.epoch(seed, epoch); }
  float train(const Batch& batch, uint64_t seed, int64_t& tokens) override {
    const Seq2SeqBatch b = make_seq2seq_batch(data_.train_src, data_.train_tgt, batch, pad_, tokens::kEos);
    tokens = b.target_tokens;
    return steps_.train(b, seed);
  }
  ModelSteps& steps() override { return steps_; }
  std::pair<double, int64_t> valid_nll() override {
    return seq2seq_nll(steps_, data_.valid_src, data_.valid_tgt, max_tokens_, pad_);
  }
  std::pair<double, int64_t> train_nll(int64_t max_batches, int rank = 0, int size = 1) override {
    return seq2seq_nll(steps_, data_.train_src, data_.train_tgt, max_tokens_, pad_, max_batches, rank, size);
  }

 private:
  const Seq2SeqData& data_;
  int32_t pad_;
  int64_t max_tokens_;
  Seq2SeqSteps steps_;
  Bucketing train_;
  int64_t batches_per_epoch_;
};

// Batches of B = max_tokens / T consecutive block indices; the epoch shuffles the blocks.
std::vector<Batch> block_batches(std::vector<int64_t> blocks, int64_t T, int64_t max_tokens) {
  const int64_t B = std::max<int64_t>(1, max_tokens / T);
  std::vector<Batch> out;
  for (size_t at = 0; at < blocks.size(); at += static_cast<size_t>(B)) {
    Batch b;
    b.Tt = T;
    b.indices.assign(
        blocks.begin() + static_cast<std::ptrdiff_t>(at),
        blocks.begin() + static_cast<std::ptrdiff_t>(std::min(blocks.size(), at + static_cast<size_t>(B))));
    out.push_back(std::move(b));
  }
  return out;
}

class LmTask : public TrainingTask {
 public:
  LmTask(const TransformerConfig& cfg, ParamStore& params, const LmData& data, int64_t T, int64_t max_tokens,
         StepRecipes recipes)
      : data_(data),
        pad_(static_cast<int32_t>(cfg.pad_id)),
        T_(T),
        max_tokens_(max_tokens),
        steps_(cfg, params, std::move(recipes)) {
    PILLARS_CHECK(T <= max_tokens, "data.block_size ", T, " exceeds data.max_tokens ", max_tokens);
    PILLARS_CHECK(data.train.size() > 1 && data.valid.size() > 1,
                  "language model: empty training or validation stream");
    const int64_t n = lm_blocks(data.train, T), B = std::max<int64_t>(1, max_tokens / T);
    batches_per_epoch_ = (n + B - 1) / B;
  }

  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  std::vector<Batch> epoch(uint64_t seed, int64_t epoch) const override {
    std::vector<int64_t> blocks(static_cast<size_t>(lm_blocks(data_.train, T_)));
    for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<int64_t>(i);
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(epoch),
                      0x1au};
    std::mt19937_64 rng(seq);
    for (size_t i = blocks.size(); i > 1; --i) std::swap(blocks[i - 1], blocks[static_cast<size_t>(rng() % i)]);
    return block_batches(blocks, T_, max_tokens_);
  }
  float train(const Batch& batch, uint64_t seed, int64_t& tokens) override {
    make_lm_batch(data_.train, batch, pad_, tokens_, target_);
    tokens = std::count_if(target_.begin(), target_.end(), [&](int32_t t) { return t != pad_; });
    return steps_.train(static_cast<int64_t>(batch.indices.size()), T_, tokens_, target_, seed);
  }
  ModelSteps& steps() override { return steps_; }
  std::pair<double, int64_t> valid_nll() override { return lm_nll(steps_, data_.valid, T_, max_tokens_, pad_); }
  std::pair<double, int64_t> train_nll(int64_t max_batches, int rank = 0, int size = 1) override {
    return lm_nll(steps_, data_.train, T_, max_tokens_, pad_, max_batches, rank, size);
  }

 private:
  const LmData& data_;
  int32_t pad_;
  int64_t T_, max_tokens_, batches_per_epoch_ = 0;
  LmSteps steps_;
  std::vector<int32_t> tokens_, target_;
};

} // namespace

int64_t lm_blocks(const std::vector<int32_t>& stream, int64_t T) {
  const int64_t predictions = static_cast<int64_t>(stream.size()) - 1; // every token but the first is a target
  return predictions <= 0 ? 0 : (predictions + T - 1) / T;
}

void make_lm_batch(const std::vector<int32_t>& stream, const Batch& batch, int32_t pad, std::vector<int32_t>& tokens,
                   std::vector<int32_t>& target) {
  const int64_t T = batch.Tt, B = static_cast<int64_t>(batch.indices.size()), n = static_cast<int64_t>(stream.size());
  tokens.assign(static_cast<size_t>(B * T), pad);
  target.assign(static_cast<size_t>(B * T), pad);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = batch.indices[b] * T;
    for (int64_t t = 0; t < T && start + t + 1 < n; ++t) {
      tokens[b * T + t] = stream[start + t];
      target[b * T + t] = stream[start + t + 1];
    }
  }
}

std::vector<std::pair<double, int64_t>> lm_block_nll(LmSteps& steps, const std::vector<int32_t>& stream, int64_t T,
                                                     int32_t pad) {
  std::vector<std::pair<double, int64_t>> rows;
  std::vector<int32_t> x, y;
  for (int64_t i = 0, n = lm_blocks(stream, T); i < n; ++i) {
    make_lm_batch(stream, Batch{{i}, 0, T}, pad, x, y);
    const double nll = steps.eval(1, T, x, y);
    rows.emplace_back(nll, std::count_if(y.begin(), y.end(), [&](int32_t t) { return t != pad; }));
  }
  return rows;
}

std::pair<double, int64_t> seq2seq_nll(Seq2SeqSteps& steps, const std::vector<std::vector<int32_t>>& src,
                                       const std::vector<std::vector<int32_t>>& tgt, int64_t max_tokens, int32_t pad,
                                       int64_t max_batches, int rank, int size) {
  double nll = 0;
  int64_t tokens = 0, done = 0;
  for (const Batch& batch : Bucketing(lengths_of(src), lengths_of(tgt), {.max_tokens = max_tokens}).in_order()) {
    if (max_batches > 0 && done >= max_batches) break;
    if (done++ % size != rank) continue;
    const Seq2SeqBatch b = make_seq2seq_batch(src, tgt, batch, pad, tokens::kEos);
    nll += steps.eval(b);
    tokens += b.target_tokens;
  }
  return {nll, tokens};
}

std::pair<double, int64_t> lm_nll(LmSteps& steps, const std::vector<int32_t>& stream, int64_t T, int64_t max_tokens,
                                  int32_t pad, int64_t max_batches, int rank, int size) {
  std::vector<int64_t> blocks(static_cast<size_t>(lm_blocks(stream, T)));
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<int64_t>(i);
  double nll = 0;
  int64_t tokens = 0;
  std::vector<int32_t> x, y;
  int64_t done = 0;
  for (const Batch& batch : block_batches(blocks, T, max_tokens)) {
    if (max_batches > 0 && done >= max_batches) break;
    if (done++ % size != rank) continue;
    make_lm_batch(stream, batch, pad, x, y);
    nll += steps.eval(static_cast<int64_t>(batch.indices.size()), T, x, y);
    tokens += std::count_if(y.begin(), y.end(), [&](int32_t t) { return t != pad; });
  }
  return {nll, tokens};
}

std::unique_ptr<TrainingTask> make_seq2seq_task(const TransformerConfig& cfg, ParamStore& params,
                                                const Seq2SeqData& data, int64_t max_tokens, StepRecipes recipes) {
  PILLARS_CHECK(!data.train_src.empty() && data.train_src.size() == data.train_tgt.size(),
                "training set is empty or misaligned");
  PILLARS_CHECK(!data.valid_src.empty() && data.valid_src.size() == data.valid_tgt.size(),
                "validation set is empty or misaligned");
  return std::make_unique<Seq2SeqTask>(cfg, params, data, max_tokens, std::move(recipes));
}

std::unique_ptr<TrainingTask> make_lm_task(const TransformerConfig& cfg, ParamStore& params, const LmData& data,
                                           int64_t block_size, int64_t max_tokens, StepRecipes recipes) {
  return std::make_unique<LmTask>(cfg, params, data, block_size, max_tokens, std::move(recipes));
}

} // namespace pillars::steps
