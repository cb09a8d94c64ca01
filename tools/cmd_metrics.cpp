// `pillars metrics CKPT_OR_RUN_DIR [--split S] [--sentences N] [--feature-map V|A|O] [--groups C]
// [--seed S] [-o FILE [--force]]`: the head-diversity metrics of a checkpoint (ght/head_metrics.h: the four
// X-ray metrics, the feature map's similarities, HUDS groups with Dunn index and Silhouette, the GCT
// terms, per attention module) on a fixed held-out batch, printed as one JSON object.
//
// The batch is the first N sentence pairs of the split (default: the run's validation split),
// encoded with the run's text pipeline exactly as `pillars eval` encodes a split; for a language
// model, the first N blocks of data.block_size tokens of the split's stream. N, the feature map,
// the groups and the K-means seed default to the run's own (heads.metrics_sentences,
// heads.feature_map, heads.groups, seed): what the trainer logs into head_metrics.jsonl, so the
// command reproduces a logged measurement from the checkpoint of the same update.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "datasets/registry.h"
#include "base/error.h"
#include "base/atomic_file.h"
#include "ght/head_metrics.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "train/pipeline.h"
#include "train/prepare.h"
#include "train/session.h"
#include "tools/commands.h"
#include "tools/output_file.h"

namespace pillars::cli {

namespace {

// Empty / 0 / −1 = the run's setting.
struct MetricsOptions {
  std::string target, choice, split, feature_map, output;
  int64_t sentences = 0;
  int groups = 0;
  int64_t seed = -1;
  int threads = 0;
  bool pretty = false, force = false;
};

// The first n pairs of a split, encoded as `pillars eval` encodes them (train/prepare.h).
steps::Seq2SeqBatch seq2seq_batch(const Experiment& e, const train::TextPipeline& pipeline, const std::string& split,
                                  int64_t n, int32_t pad) {
  const train::EncodedPairs pairs = train::encode_eval_pairs(e, pipeline, train::read_eval_split(e, split),
                                                             static_cast<size_t>(std::max<int64_t>(n, 1)));
  return ght::held_out_batch(pairs.src, pairs.tgt, n, pad, pipeline.dictionary().eos());
}

// The first n blocks of the split's token stream.
ght::LmBatch lm_batch(const Experiment& e, const train::TextPipeline& pipeline, const std::string& split, int64_t n,
                      int32_t pad) {
  const std::vector<int32_t> stream = train::lm_stream(pipeline, data::read_field(e.data.dataset, split, "text"));
  return ght::held_out_lm_batch(stream, e.data.block_size, n, pad);
}

int run_metrics(const MetricsOptions& opt) {
  if (!opt.output.empty()) check_output_path(opt.output, "--output", opt.force); // before the work, not after it
  if (opt.threads > 0) omp_set_num_threads(opt.threads);
  const std::string run_dir = train::run_dir_of(opt.target);
  const Experiment e = train::load_run_config(run_dir);
  const std::string path = train::checkpoint_path(opt.target, opt.choice, false);
  train::LoadedCheckpoint ck = train::load_checkpoint(path);
  const train::TextPipeline pipeline = train::TextPipeline::load(run_dir);
  train::check_run_checkpoint(ck, path, pipeline, run_dir, e); // its dictionary and its model
  const std::string split = opt.split.empty() ? train::valid_split_of(e) : opt.split;
  if (!opt.split.empty()) { // named by the flag, before anything is read
    const data::DatasetSpec& d = data::find_dataset(e.data.dataset);
    std::string known;
    for (const data::SplitSpec& s : d.splits) known += str_cat(known.empty() ? "" : ", ", s.name);
    if (std::none_of(d.splits.begin(), d.splits.end(), [&](const data::SplitSpec& s) { return s.name == split; }))
      throw InputError(str_cat("--split ", split, ": dataset ", d.name,
                               " (the run's data.dataset) has no such split (its splits: ", known, ")"));
  }
  const int32_t pad = static_cast<int32_t>(ck.config.pad_id);

  ght::HeadMetricsOptions mo;
  mo.feature_map =
      opt.feature_map.empty() ? e.heads.feature_map : parse_enum<ght::FeatureMap>(opt.feature_map, "--feature-map");
  mo.groups = static_cast<int>(opt.groups > 0 ? opt.groups : e.heads.groups);
  mo.seed = static_cast<uint64_t>(opt.seed >= 0 ? opt.seed : e.seed);
  const int64_t n = opt.sentences > 0 ? opt.sentences : e.heads.metrics_sentences;
  ght::HeadMetrics m =
      ck.config.decoder_only
          ? ght::measure_head_metrics(ck.config, ck.params, lm_batch(e, pipeline, split, n, pad), mo)
          : ght::measure_head_metrics(ck.config, ck.params, seq2seq_batch(e, pipeline, split, n, pad), mo);
  m.update = ck.state.updates;
  m.epoch = ck.state.epoch - (ck.state.batch_in_epoch == 0 ? 1 : 0); // the trainer's log: the epoch just finished

  const std::string text = ght::to_json(m).dump(opt.pretty ? 2 : -1) + "\n";
  if (opt.output.empty())
    std::fputs(text.c_str(), stdout);
  else
    io::atomic_write_file(opt.output, text);
  return 0;
}

} // namespace

Command add_metrics_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "metrics",
      "Head-diversity metrics of a checkpoint (X-ray metrics, HUDS groups, Dunn, Silhouette, GCT terms) as JSON");
  cmd->footer(
      "On the first N sentence pairs (a language model: N blocks of data.block_size tokens) of the split, in "
      "evaluation mode, padding left out. Per attention module: orthogonality, context_nonorth (raw and _norm), "
      "output_dissimilarity, attention_variance, the feature map's cosine similarities, HUDS labels, dunn, "
      "silhouette (standard) and silhouette_ght (the authors' Fig. 2 convention), homogenization, diversification; "
      "scalars are means over head pairs, and pairs holds the H x H "
      "matrices. Definitions: ght/xray.h and ght/head_metrics.h.");
  auto opt = std::make_shared<MetricsOptions>();
  cmd->add_option("run", opt->target, "run directory or checkpoint file (.safetensors in a run directory)")->required();
  cmd->add_option("--checkpoint", opt->choice,
                  "which checkpoint of a run directory (default: the run's eval.checkpoint)")
      ->check(CLI::IsMember({"best", "last", "average"}));
  cmd->add_option("--split", opt->split, "dataset split (default: the run's validation split)");
  cmd->add_option(
         "--sentences", opt->sentences,
         "held-out sentence pairs, or blocks for a language model (default: the run's heads.metrics_sentences)")
      ->check(CLI::Range(int64_t{1}, limits::kMaxSentences));
  cmd->add_option("--feature-map", opt->feature_map,
                  "GHT feature map clustered and compared: V, A or O (default: the run's heads.feature_map)")
      ->check(CLI::IsMember({"V", "A", "O"}));
  cmd->add_option("--groups", opt->groups,
                  "HUDS groups C; a module with fewer heads uses its head count (default: the run's heads.groups)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", opt->seed, "K-means seed (default: the run's seed)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", opt->output,
                  "write the JSON to this file instead of stdout (a new file, not inside a run folder)");
  cmd->add_flag("--force", opt->force, "let --output replace a file that exists");
  cmd->add_flag("--pretty", opt->pretty, "indent the JSON");
  add_allow_unchecked_flag(cmd);
  cmd->add_option("--threads", opt->threads, "CPU threads (0 = all cores)")->check(threads_range());
  return {cmd, [opt]() { return run_metrics(*opt); }};
}

} // namespace pillars::cli
