// `pillars graph`: prints a model's graph before and after a pass — a reader's best tool.
#include <iostream>
#include <memory>
#include <string>

#include "base/error.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/fuse_linear.h"
#include "engine/passes/plan_memory.h"
#include "engine/passes/print.h"
#include "models/transformer.h"
#include "tools/commands.h"

namespace pillars::cli {

Command add_graph_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("graph", "Print the training graph of a model config, before/after a pass");
  struct Options {
    std::string config = "tiny";
    std::string pass = "none";
    bool fuse_linear = false;
    int64_t batch = 2, src_len = 5, tgt_len = 4;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("--config", opt->config, "named model config (tiny, small, bench, base, lite1, lite2, lm-small, lm-wt103)");
  cmd->add_option("--pass", opt->pass, "show the graph after this pass (fuse_linear: the forward graph after "
                                       "fuse_linear_activation; autodiff, plan_memory: the training graph)")
      ->check(CLI::IsMember({"none", "fuse_linear", "autodiff", "plan_memory"}));
  cmd->add_flag("--fuse-linear", opt->fuse_linear, "run fuse_linear_activation before autodiff (implied by --pass fuse_linear)");
  cmd->add_option("--batch", opt->batch, "batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--src-len", opt->src_len, "source length")->check(CLI::PositiveNumber);
  cmd->add_option("--tgt-len", opt->tgt_len, "target length")->check(CLI::PositiveNumber);
  return {cmd, [opt]() {
            const TransformerConfig cfg = transformer_config(opt->config);
            // A decoder-only config (lm-*) gets the language model's graph over --tgt-len tokens.
            Graph g;
            ValueId loss = kNoValue;
            if (cfg.decoder_only) {
              Seq2SeqOptions o;
              o.label_smoothing = 0.1f, o.train = false;
              LmGraph m = build_lm_training_graph(cfg, opt->batch, opt->tgt_len, o);
              g = std::move(m.graph), loss = m.loss;
            } else {
              Seq2SeqGraph m = build_seq2seq_training_graph(cfg, opt->batch, opt->src_len, opt->tgt_len, 0.1f, 1, false);
              g = std::move(m.graph), loss = m.loss;
            }
            const int forward_nodes = static_cast<int>(g.nodes().size());
            std::cout << "# forward graph: " << forward_nodes << " nodes\n";
            print_graph(g, std::cout);
            if (opt->pass == "none") return 0;
            int before_autodiff = forward_nodes;
            if (opt->pass == "fuse_linear" || opt->fuse_linear) {
              FusedGraph f = fuse_linear_activation(g);
              loss = f.value(loss);
              g = std::move(f.graph);
              before_autodiff = static_cast<int>(g.nodes().size());
              std::cout << "# after fuse_linear_activation: " << f.fused << " linear → activation chains fused, " << before_autodiff
                        << " nodes\n";
              print_graph(g, std::cout);
              if (opt->pass == "fuse_linear") return 0;
            }
            autodiff(g, loss, g.params());
            std::cout << "# after autodiff: " << g.nodes().size() - before_autodiff << " backward nodes appended\n";
            print_graph(g, std::cout, before_autodiff);
            if (opt->pass == "plan_memory") {
              const MemoryPlan plan = plan_memory(g);
              std::cout << "# plan_memory: arena " << plan.arena_bytes << " bytes (one buffer per value: " << plan.naive_bytes
                        << "), workspace " << plan.workspace_bytes << " bytes\n";
            }
            return 0;
          }};
}

} // namespace pillars::cli
