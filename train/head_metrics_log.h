// head_metrics.jsonl: the heads' metrics (ght/head_metrics.h) measured during training, one
// measurement per line (their JSON plus "phase"), each appended whole or not at all
// (base/log_file.h: a failed write throws pillars::Error naming the file, and leaves no cut line),
// and the shift of the heads' similarity structure between consecutive measurements (the "shift"
// trigger). The file is opened at the first measurement, so a run that measures nothing has none.
//
//   HeadMetricsLog metrics(e, data, pad, run_dir, "train");
//   attach_metrics(options, metrics, e, cfg, params, /*shift_trigger=*/false);
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/log_file.h"
#include "ght/head_metrics.h"
#include "train/trainer.h"

namespace pillars::train {

class HeadMetricsLog {
 public:
  // The held-out batch: heads.metrics_sentences pairs, or as many tokens (~32 a sentence) in blocks.
  HeadMetricsLog(const Experiment& e, const RunData& data, int32_t pad, const std::string& run_dir, std::string phase);
  bool enabled() const { return static_cast<bool>(measure_); }

  void measure(const TransformerConfig& cfg, ParamStore& params, const TrainerState& state);

  // Mean over modules of ‖S_t − S_{t−1}‖_F / ‖S_{t−1}‖_F, S = the heads' feature-map cosine
  // matrix on the held-out batch (+inf before two measurements of the same model).
  double shift() const;

 private:
  std::function<ght::HeadMetrics(const TransformerConfig&, ParamStore&, const ght::HeadMetricsOptions&)> measure_;
  std::string path_, phase_;
  std::optional<io::LineFile> file_;
  ght::HeadMetricsOptions options_;
  std::vector<std::vector<double>> previous_, latest_;
};

// Wires the metrics (and the shift trigger) into the trainer's callbacks.
void attach_metrics(TrainOptions& to, HeadMetricsLog& log, const Experiment& e, const TransformerConfig& cfg,
                    ParamStore& params, bool shift_trigger);

} // namespace pillars::train
