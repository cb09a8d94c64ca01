// `pillars graph`: prints the graph of a training step after any pass — a reader's best tool.
//
//   pillars graph --passes                           the pass list, in the order a step runs it
//   pillars graph experiments/ght/ght.json --passes  the entries its training step runs
//   pillars graph experiments/ght/ght.json --after gct
//                                                    the step of that experiment after the GCT pass,
//                                                    its nodes marked "+"
//   pillars graph --config tiny --after autodiff     a named model config with no method
//   pillars graph experiments/ght/ght.json --vote --after v2s_vote
//                                                    the V2S vote's forward-only step
//   pillars graph --config tiny --decode step        the decoding graphs (models/decoding.h): one
//   pillars graph --config tiny --decode encoder     decoder step with its caches, or the encoder
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "base/error.h"
#include "engine/params.h"
#include "engine/passes/print.h"
#include "models/decoding.h"
#include "models/transformer.h"
#include "steps/steps.h"
#include "tools/commands.h"
#include "train/experiment.h"
#include "train/pass_list.h"
#include "train/setup.h"

namespace pillars::cli {

namespace {

struct Options {
  std::string experiment;
  std::vector<std::string> sets;
  std::string config;
  std::string after;
  std::string decode; // "", "encoder" or "step"
  int64_t beam = 5;
  bool passes = false, eval = false, vote = false, fuse_linear = false, fuse_cross_entropy = false, bf16_saved = false,
       added_only = false;
  int64_t batch = 2, src_len = 5, tgt_len = 4;
};

int print_pass_list() {
  int i = 0;
  std::cout << "# the passes of a step, in order (train/pass_list.cpp); the model builder's forward graph goes in\n";
  for (const train::PassEntry& p : train::pass_list())
    std::cout << ++i << ". " << p.name << "\n     when: " << p.when << "\n     " << p.what << "\n";
  std::cout << "# and the rewrite of a whole model, after which every step's graph is built anew\n";
  for (const train::ModelPassInfo& p : train::model_pass_list())
    std::cout << "-  " << p.name << "\n     when: " << p.when << "\n     " << p.what << "\n";
  return 0;
}

// The decoding graphs of the experiment's (or config's) model: the encoder graph of a batch of
// sentences, or one decoder step of sentences × beam rows whose caches hold tgt_len slots.
int print_decoding(const Options& opt) {
  TransformerConfig cfg;
  if (!opt.experiment.empty()) {
    const Experiment e = load_experiment(opt.experiment, opt.sets, default_validation_context());
    cfg = train::model_config(e, transformer_config(e.model.config).vocab);
  } else {
    cfg = transformer_config(opt.config.empty() ? "tiny" : opt.config);
  }
  if (opt.decode == "encoder") {
    if (cfg.decoder_only) throw InputError("--decode encoder: a decoder-only model has no encoder");
    const EncoderGraph g = build_encoder_graph(cfg, opt.batch, opt.src_len);
    std::cout << "# the encoder graph of decoding, B " << opt.batch << ", source " << opt.src_len << ": "
              << g.graph.nodes().size()
              << " nodes; its outputs are each decoder layer's cross-attention keys and values\n";
    print_graph(g.graph, std::cout);
    return 0;
  }
  DecoderStepShape shape;
  shape.rows = shape.rows_before = opt.batch * opt.beam;
  shape.rows_per_sentence = opt.beam;
  shape.sentences_before = cfg.decoder_only ? 0 : opt.batch;
  shape.source_len = cfg.decoder_only ? 0 : opt.src_len;
  shape.capacity = opt.tgt_len;
  shape.beam_candidates = 2 * opt.beam;
  const DecoderStepGraph g = build_decoder_step_graph(cfg, shape);
  std::cout << "# one decoder step, " << opt.batch << " sentences × beam " << opt.beam << " = " << shape.rows
            << " rows";
  if (!cfg.decoder_only) std::cout << ", source " << opt.src_len;
  std::cout << ", caches of " << opt.tgt_len << " slots: " << g.graph.nodes().size() << " nodes\n";
  print_graph(g.graph, std::cout);
  return 0;
}

// The context of the step to show: the experiment's (its training or evaluation step, or the V2S
// vote's) or a named config's with no method; the command's flags add the optional passes.
train::StepContext step_context_of(const Options& opt, TransformerConfig& cfg) {
  train::StepContext c;
  c.label_smoothing = 0.1f;
  if (!opt.experiment.empty()) {
    const Experiment e = load_experiment(opt.experiment, opt.sets, default_validation_context());
    // The vocabulary comes from the dataset's dictionary in a run; the config's placeholder is
    // enough to show the graph.
    cfg = train::model_config(e, transformer_config(e.model.config).vocab);
    c = opt.vote ? train::vote_context(e) : train::step_context(e);
  } else {
    cfg = transformer_config(opt.config.empty() ? "tiny" : opt.config);
  }
  c.passes.fuse_linear = c.passes.fuse_linear || opt.fuse_linear;
  c.passes.fuse_cross_entropy = c.passes.fuse_cross_entropy || opt.fuse_cross_entropy;
  c.passes.bf16_saved_activations = c.passes.bf16_saved_activations || opt.bf16_saved;
  c.train = !opt.eval && !opt.vote;
  return c;
}

// `pillars graph EXP.json --passes`: the entries of the list this step runs, in order.
int print_step_passes(const Options& opt) {
  TransformerConfig cfg;
  const train::StepContext c = step_context_of(opt, cfg);
  int i = 0;
  std::cout << "# the passes of this "
            << (opt.vote  ? "V2S vote"
                : c.train ? "training"
                          : "evaluation")
            << " step, in order (train/pass_list.cpp)\n";
  for (const train::PassEntry& p : train::pass_list())
    if (p.applies(c)) std::cout << ++i << ". " << p.name << "\n     when: " << p.when << "\n     " << p.what << "\n";
  return 0;
}

int print_step(const Options& opt) {
  TransformerConfig cfg;
  const train::StepContext c = step_context_of(opt, cfg);
  const bool train = c.train;
  ParamStore params; // receives the method's own parameters (GCT classifiers, gate logits)
  train::add_method_parameters(c, cfg, params);
  const GraphOptions o = train::step_options(c);
  steps::StepGraph s =
      cfg.decoder_only
          ? steps::StepGraph::of(build_lm_training_graph(cfg, opt.batch, opt.tgt_len, o), train, Device::cpu)
          : steps::StepGraph::of(build_seq2seq_training_graph(cfg, opt.batch, opt.src_len, opt.tgt_len, o), train,
                                 Device::cpu);
  const steps::PassList passes = train::step_passes(c);
  std::cout << "# " << (opt.vote ? "V2S vote" : train ? "training" : "evaluation") << " step, B " << opt.batch;
  if (!cfg.decoder_only) std::cout << ", source " << opt.src_len;
  std::cout << ", target " << opt.tgt_len << "; its passes: model";
  for (const steps::Pass& p : passes) std::cout << " → " << p.name;
  std::cout << "\n";
  const std::string last = opt.after.empty() || opt.after == "model" ? std::string() : opt.after;
  if (last.empty()) {
    std::cout << "# the model's forward graph: " << s.graph.nodes().size() << " nodes\n";
    print_graph(s.graph, std::cout);
    return 0;
  }
  const auto at = std::find_if(passes.begin(), passes.end(), [&](const steps::Pass& p) { return p.name == last; });
  if (at == passes.end()) {
    bool known = false;
    for (const train::PassEntry& p : train::pass_list()) known = known || p.name == last;
    throw InputError(known ? str_cat("--after ", last, ": this step does not run that pass (see its passes above)")
                           : str_cat("--after ", last, ": no such pass (pillars graph --passes lists them)"));
  }
  steps::run_passes(passes, s, last);
  const int pass_index = static_cast<int>(at - passes.begin());
  std::vector<bool> added(s.graph.nodes().size());
  int count = 0;
  for (size_t i = 0; i < added.size(); ++i) count += (added[i] = s.added_by[i] == pass_index);
  std::cout << "# after " << last << ": " << s.graph.nodes().size() << " nodes, " << count << " added by " << last
            << " (marked +)";
  if (last == "plan_memory")
    std::cout << "; arena " << s.memory.arena_bytes << " bytes (one buffer per value: " << s.memory.naive_bytes
              << "), workspace " << s.memory.workspace_bytes << " bytes";
  std::cout << "\n";
  if (opt.added_only) {
    for (size_t i = 0; i < added.size(); ++i)
      if (added[i]) print_graph_node(s.graph, std::cout, static_cast<int>(i));
  } else {
    print_graph(s.graph, std::cout, 0, &added);
  }
  return 0;
}

} // namespace

Command add_graph_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("graph", "Print the graph of a training step after any pass (nodes the pass added marked +)");
  auto opt = std::make_shared<Options>();
  cmd->add_option("experiment", opt->experiment, "experiment file: its model, its method's passes, its settings");
  cmd->add_option("--set", opt->sets, "override a field of the experiment, e.g. --set heads.groups=3");
  cmd->add_option("--config", opt->config,
                  "a named model config with no method, instead of an experiment (tiny, small, bench, "
                  "base, lite1, lite2, lm-small, lm-wt103)")
      ->check(CLI::IsMember(transformer_config_names()));
  cmd->add_option("--after", opt->after,
                  "show the graph after this pass (default: the model's forward graph, before any)");
  cmd->add_flag(
      "--passes", opt->passes,
      "list every pass, in the order a step runs them (with an experiment or --config: those its step runs), and exit");
  cmd->add_flag("--eval", opt->eval, "the evaluation step (no dropout, no backward) instead of the training step");
  cmd->add_flag("--vote", opt->vote, "the V2S vote's forward-only step of the experiment (its pass: v2s_vote)");
  cmd->add_flag("--fuse-linear", opt->fuse_linear, "run fuse_linear_activation (as train.fuse_linear_activation does)");
  cmd->add_flag("--fuse-cross-entropy", opt->fuse_cross_entropy,
                "run fuse_linear_cross_entropy (as train.fuse_linear_cross_entropy does; training steps)");
  cmd->add_flag("--bf16-saved-activations", opt->bf16_saved,
                "run saved_activations (as train.saved_activations = bf16 does); values under 1024 elements stay "
                "f32, so give a batch that is not tiny (e.g. --batch 8 --tgt-len 32)");
  cmd->add_flag("--added-only", opt->added_only, "print only the nodes the pass added");
  cmd->add_option("--decode", opt->decode,
                  "print a decoding graph instead of a training step: encoder | step "
                  "(--batch sentences, --beam, --src-len, --tgt-len cache slots)")
      ->check(CLI::IsMember({"encoder", "step"}));
  cmd->add_option("--beam", opt->beam, "with --decode step: rows per sentence")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--batch", opt->batch, "batch size")->check(CLI::Range(int64_t{1}, limits::kMaxBatchTokens));
  cmd->add_option("--src-len", opt->src_len, "source length")->check(CLI::Range(int64_t{1}, limits::kMaxBatchTokens));
  cmd->add_option("--tgt-len", opt->tgt_len, "target length (the block length of a language model)")
      ->check(CLI::Range(int64_t{1}, limits::kMaxBatchTokens));
  return {cmd, [opt]() {
            if (opt->passes)
              return opt->experiment.empty() && opt->config.empty() ? print_pass_list() : print_step_passes(*opt);
            // The graph is planned for this batch: its tokens are bounded as data.max_tokens is.
            if (opt->batch * std::max(opt->src_len, opt->tgt_len) > limits::kMaxBatchTokens)
              throw InputError(str_cat("--batch × max(--src-len, --tgt-len) = ", opt->batch, " × ",
                                       std::max(opt->src_len, opt->tgt_len), " is more than the ",
                                       limits::kMaxBatchTokens, " tokens a batch may hold"));
            if (!opt->experiment.empty() && !opt->config.empty())
              throw InputError("pillars graph: give an experiment file or --config, not both");
            if (opt->vote && opt->experiment.empty()) throw InputError("pillars graph --vote: give an experiment file");
            if (!opt->decode.empty()) {
              if (!opt->after.empty() || opt->vote || opt->eval)
                throw InputError("--decode: the decoding graphs run no passes (no --after, --vote or --eval)");
              return print_decoding(*opt);
            }
            return print_step(*opt);
          }};
}

} // namespace pillars::cli
