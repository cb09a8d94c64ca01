// The heads' metrics during training, head_metrics.jsonl; see head_metrics_log.h.
#include "train/head_metrics_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "base/special_tokens.h"

namespace pillars::train {

namespace fs = std::filesystem;

HeadMetricsLog::HeadMetricsLog(const Experiment& e, const RunData& data, int32_t pad, const std::string& run_dir,
                               std::string phase)
    : path_((fs::path(run_dir) / "head_metrics.jsonl").string()), phase_(std::move(phase)) {
  options_.feature_map = e.heads.feature_map;
  options_.groups = static_cast<int>(e.heads.groups);
  options_.seed = static_cast<uint64_t>(e.seed);
  if (!e.heads.metrics) return;
  if (data.pairs) {
    const steps::Seq2SeqBatch held_out = ght::held_out_batch(*data.pairs, e.heads.metrics_sentences, pad, tokens::kEos);
    measure_ = [held_out](const TransformerConfig& cfg, ParamStore& params, const ght::HeadMetricsOptions& o) {
      return ght::measure_head_metrics(cfg, params, held_out, o);
    };
  } else {
    const int64_t blocks = std::max<int64_t>(1, e.heads.metrics_sentences * 32 / e.data.block_size);
    const ght::LmBatch held_out = ght::held_out_batch(*data.stream, e.data.block_size, blocks, pad);
    measure_ = [held_out](const TransformerConfig& cfg, ParamStore& params, const ght::HeadMetricsOptions& o) {
      return ght::measure_head_metrics(cfg, params, held_out, o);
    };
  }
}

void HeadMetricsLog::measure(const TransformerConfig& cfg, ParamStore& params, const TrainerState& state) {
  if (!enabled()) return;
  ght::HeadMetrics m = measure_(cfg, params, options_);
  m.update = state.updates;
  m.epoch = state.epoch - (state.batch_in_epoch == 0 ? 1 : 0);
  nlohmann::json j = ght::to_json(m);
  j["phase"] = phase_;
  if (!file_) file_.emplace(path_);
  file_->append(j.dump());
  previous_ = std::move(latest_);
  latest_.clear();
  for (const auto& mod : m.modules) latest_.push_back(mod.similarity);
}

double HeadMetricsLog::shift() const {
  if (previous_.empty() || previous_.size() != latest_.size()) return INFINITY;
  double total = 0;
  for (size_t m = 0; m < latest_.size(); ++m) {
    if (latest_[m].size() != previous_[m].size()) return INFINITY;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < latest_[m].size(); ++i) {
      diff += (latest_[m][i] - previous_[m][i]) * (latest_[m][i] - previous_[m][i]);
      norm += previous_[m][i] * previous_[m][i];
    }
    total += std::sqrt(diff / std::max(norm, 1e-30));
  }
  return total / static_cast<double>(latest_.size());
}

void attach_metrics(TrainOptions& to, HeadMetricsLog& log, const Experiment& e, const TransformerConfig& cfg,
                    ParamStore& params, bool shift_trigger) {
  if (!log.enabled()) return;
  const int64_t every = e.heads.metrics_every;
  if (every > 0)
    to.after_update = [&log, &cfg, &params, every](const TrainerState& s) {
      if (s.updates % every == 0) log.measure(cfg, params, s);
    };
  const double rho = e.prune.rho;
  const bool quiet = to.quiet;
  to.after_validation = [&log, &cfg, &params, every, shift_trigger, rho, quiet](const TrainerState& s,
                                                                                const ValidScores&) -> std::string {
    if (every == 0) log.measure(cfg, params, s);
    if (!shift_trigger) return "";
    const double shift = log.shift();
    if (!quiet && std::isfinite(shift))
      std::fprintf(stderr, "heads: geometry shift %.3g (prune below %.3g)\n", shift, rho);
    return shift < rho ? "centroid_shift" : "";
  };
}

} // namespace pillars::train
