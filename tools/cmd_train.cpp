// `pillars train EXP.json [--set key=value]… [--out DIR] [--resume]`: one experiment, end to end
// (prepare the data, train, evaluate on the test split). See train/session.h for the run directory.
#include <omp.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/run_guard.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "train/session.h"
#include "tools/commands.h"
#include "tools/decoding_options.h"
#include "tools/run_job.h"

namespace pillars::cli {

void add_overwrite_flag(CLI::App* cmd, bool& overwrite) {
  cmd->add_flag("--overwrite", overwrite,
                "start a new run in a --out folder that holds files of a run: its whole content is first moved (never "
                "deleted) to a new sibling folder <out>.old-<UTC time>, named on stderr");
}

void add_allow_unchecked_flag(CLI::App* cmd) {
  cmd->add_flag_callback(
      "--allow-unchecked", [] { train::allow_unchecked_checkpoints(true); },
      "load a checkpoint that records no checksum (pillars.checksum: another tool's file, or an "
      "edited one), which is refused otherwise");
}

Command add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train (and then evaluate) the model an experiment file describes");
  struct Options {
    std::string experiment, out;
    std::vector<std::string> sets;
    bool resume = false, overwrite = false, quiet = false, no_eval = false;
    int threads = 0;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("experiment", opt->experiment, "experiment file (JSON; `pillars schema --markdown` lists the fields)")
      ->required();
  cmd->add_option("--set", opt->sets, "override a field: --set optim.lr=1e-3 (dotted path; value parsed as JSON)")
      ->take_all()
      ->allow_extra_args(false);
  CLI::Option* out = cmd->add_option("--out", opt->out, "run directory (default: runs/<experiment name>)");
  cmd->add_flag("--resume", opt->resume, "continue the run in the run directory from its checkpoint_last");
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
            const int threads = opt->threads > 0 ? opt->threads : static_cast<int>(e.threads);
            if (threads > 0) omp_set_num_threads(threads);
            train::SessionOptions so;
            so.run_dir = opt->out;
            so.resume = opt->resume;
            so.overwrite = opt->overwrite;
            so.quiet = opt->quiet;
            so.evaluate = !opt->no_eval;
            const nlohmann::json result = run_in_job(e, so); // one process, or a data-parallel job
            if (!result.empty()) std::printf("%s\n", result.dump(2).c_str());
            if (result.contains("bleu"))
              std::printf("test BLEU (%s): %.2f   %s\n", result["split"].get<std::string>().c_str(),
                          result["bleu"].get<double>(), result["sacrebleu"].get<std::string>().c_str());
            return 0;
          }};
}

Command add_eval_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a trained run or checkpoint: loss, perplexity, BLEU / ROUGE");
  struct Options {
    std::string target, split, checkpoint;
    DecodingOverrides decoding;
    int threads = 0;
    bool shuffle_sources = false;
    std::string device = "cpu", precision;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("run", opt->target, "run directory or checkpoint file (.safetensors in a run directory)")->required();
  cmd->add_option("--split", opt->split, "dataset split (default: the run's eval.split, else its test split)");
  cmd->add_option(
         "--checkpoint", opt->checkpoint,
         "which checkpoint of a run directory (default: the run's eval.checkpoint; last where that file is missing)")
      ->check(CLI::IsMember({"best", "last", "average"}));
  add_decoding_options(cmd, &opt->decoding);
  cmd->add_option("--threads", opt->threads, "CPU threads (0 = all cores)")->check(threads_range());
  cmd->add_option("--device", opt->device, "where to decode: cpu | cuda")->check(CLI::IsMember(enum_names<Device>()));
  cmd->add_option("--precision", opt->precision,
                  "decoding precision on the CPU: fp32 | bf16 (default: the run's eval.precision)")
      ->check(CLI::IsMember(enum_names<Precision>()));
  cmd->add_flag("--shuffle-sources", opt->shuffle_sources,
                "control run: score each target against the next example's source (does the model read its input?); "
                "writes eval_<split>_shuffled.json");
  add_allow_unchecked_flag(cmd);
  return {cmd, [opt]() {
            if (opt->threads > 0) omp_set_num_threads(opt->threads);
            train::EvalOptions eo;
            eo.shuffle_sources = opt->shuffle_sources;
            eo.device = device_flag(opt->device);
            eo.split = opt->split;
            eo.checkpoint = opt->checkpoint;
            const DecodingOverrides& d = opt->decoding;
            if (d.beam > 0) eo.beam = d.beam;
            if (d.batch > 0) eo.batch_sentences = d.batch;
            if (d.lenpen >= 0) eo.lenpen = d.lenpen;
            if (d.max_len_a >= 0) eo.max_len_a = d.max_len_a;
            if (d.max_len_b >= 0) eo.max_len_b = d.max_len_b;
            if (!opt->precision.empty()) eo.precision = parse_enum<Precision>(opt->precision, "--precision");
            const nlohmann::json r = train::evaluate_run(opt->target, eo);
            std::printf("%s\n", r.dump(2).c_str());
            return 0;
          }};
}

} // namespace pillars::cli
