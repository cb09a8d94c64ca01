// `pillars prune EXP.json --from CKPT [--set key=value]… [--out DIR] [--resume]`: the prune step of
// an experiment (its `prune` section: V2S, Michel's importance, Voita's gates) applied to a model
// already trained, then the fine-tuning of the pruned model and its evaluation
// (train/head_phases.h). The run directory gets votes.json, prune.json,
// checkpoint_pruned.safetensors and pruned/ (the fine-tuning run). Under prune.finetune_schedule
// "continue" the fine-tuning carries on the checkpoint's training: its optimizer state (sliced to
// the kept heads), update count and learning-rate schedule, until the experiment's train.max_updates;
// a checkpoint without optimizer state (an averaged one) is fine-tuned as "restart" does, with a note.
#include <omp.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/run_guard.h"
#include "train/experiment.h"
#include "train/session.h"
#include "tools/commands.h"
#include "tools/run_job.h"

namespace pillars::cli {

Command add_prune_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "prune",
      "Prune the heads of a trained checkpoint as an experiment's `prune` section says (V2S: vote, keep, remove), "
      "then fine-tune and evaluate the smaller model");
  struct Options {
    std::string experiment, from, out;
    std::vector<std::string> sets;
    bool resume = false, overwrite = false, quiet = false, no_eval = false;
    int threads = 0;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("experiment", opt->experiment, "experiment file (its data, prune and eval sections are used)")
      ->required();
  cmd->add_option("--from", opt->from, "the trained checkpoint (.safetensors) to prune")->required();
  cmd->add_option("--set", opt->sets, "override a field: --set prune.keep=top_c")->take_all()->allow_extra_args(false);
  CLI::Option* out = cmd->add_option("--out", opt->out, "run directory (default: runs/<experiment name>-pruned)");
  cmd->add_flag("--resume", opt->resume, "continue an interrupted prune run in the run directory");
  add_overwrite_flag(cmd, opt->overwrite);
  cmd->add_option("--threads", opt->threads, "CPU threads (default: the experiment's `threads`, 0 = all cores)")
      ->check(threads_range());
  cmd->add_flag("--no-eval", opt->no_eval, "skip the final evaluation on the test split");
  cmd->add_flag("--quiet", opt->quiet, "no progress lines");
  add_allow_unchecked_flag(cmd);
  return {cmd, [opt, out]() {
            if (out->count() > 0 && opt->out.empty())
              throw InputError("--out: an empty folder name (leave --out out for the default)");
            const Experiment e = load_experiment(opt->experiment, opt->sets, default_validation_context());
            if (e.prune.method == ght::PruneMethod::none)
              throw InputError(str_cat(opt->experiment,
                                       ": \"prune.method\" is \"none\": nothing to prune (set it, e.g. "
                                       "--set prune.method=v2s)"));
            const int threads = opt->threads > 0 ? opt->threads : static_cast<int>(e.threads);
            if (threads > 0) omp_set_num_threads(threads);
            train::SessionOptions so;
            so.run_dir = opt->out.empty() ? "runs/" + e.name + "-pruned" : opt->out;
            so.resume = opt->resume;
            so.overwrite = opt->overwrite;
            so.quiet = opt->quiet;
            so.evaluate = !opt->no_eval;
            so.prune_from = opt->from;
            const nlohmann::json result = run_in_job(e, so); // one process, or a data-parallel job
            if (!result.empty()) std::printf("%s\n", result.dump(2).c_str());
            return 0;
          }};
}

} // namespace pillars::cli
