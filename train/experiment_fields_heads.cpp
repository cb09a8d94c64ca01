// The experiment table's last rows: the `heads` section (GHT's training and the baselines' head
// methods) and the `prune` section. See experiment_table.h.
#include "train/experiment_table.h"

#include "train/limits.h"

namespace pillars::experiment_table {

std::vector<Entry> heads_rows() {
  using F = schema::Field;
  using E = Experiment;
  using HS = HeadsSettings;
  using P = PruneSettings;
  namespace L = limits;
  return {
      section(F::section("heads",
                         "Head-level methods while training: GHT's group-constrained training (GCT), the baselines' "
                         "regularizers and gates, and head-diversity measurements (docs/METHOD.md).")),
      in(F::enumeration(
             "heads.regularizer", enum_names<ght::Regularizer>(),
             "Loss added per attention module: gct (GHT, Eq. 4), disagreement (Li et al. 2018), none (vanilla).")
             .def("none"),
         &E::heads, &HS::regularizer),
      in(F::enumeration("heads.feature_map", enum_names<ght::FeatureMap>(),
                        "Feature map the heads are clustered and compared by: V values, A attention probabilities, O "
                        "head outputs.")
             .def("V"),
         &E::heads, &HS::feature_map),
      in(F::integer("heads.groups", "HUDS groups C per module (K-means clusters).")
             .def(2)
             .at_least(1)
             .at_most(L::kMaxHeads),
         &E::heads, &HS::groups),
      in(F::number("heads.alpha", "GCT homogenization weight (heads toward their group center).").def(0.7).at_least(0),
         &E::heads, &HS::alpha),
      in(F::number("heads.beta", "GCT diversification weight (group centers apart).").def(0.5).at_least(0), &E::heads,
         &HS::beta),
      in(F::enumeration("heads.gct_variant", enum_names<ght::GctVariant>(),
                        "GCT loss: metric (Eq. 4B, the paper's) or classification (Eq. 4A).")
             .def("metric"),
         &E::heads, &HS::gct_variant),
      in(F::enumeration(
             "heads.gct_scale", enum_names<ght::GctScale>(),
             "per_token divides the summed GCT terms by the batch's target tokens, as the reference code does, so "
             "the paper's alpha and beta transfer; per_batch adds them as they are.")
             .def("per_token"),
         &E::heads, &HS::gct_scale),
      in(F::enumeration("heads.disagreement", enum_names<ght::Disagreement>(),
                        "Li et al. 2018's disagreement on values (subspace), attention probabilities (position) or "
                        "head outputs (output).")
             .def("subspace"),
         &E::heads, &HS::disagreement),
      in(F::number("heads.lambda", "Weight of the disagreement regularizer.").def(1.0).at_least(0), &E::heads,
         &HS::lambda),
      in(F::number("heads.drophead",
                   "Scheduled DropHead (Zhou et al. 2020): peak rate of dropping whole heads; 0 = off.")
             .def(0.0)
             .at_least(0)
             .less_than(1),
         &E::heads, &HS::drophead),
      in(F::enumeration("heads.gates", enum_names<ght::HeadGates>(),
                        "Learned head gates: hard_concrete (Voita et al. 2019, L0 penalty).")
             .def("none"),
         &E::heads, &HS::gates),
      in(F::number("heads.l0_lambda", "Weight of the hard-concrete gates' L0 penalty.").def(0.01).at_least(0),
         &E::heads, &HS::l0_lambda),
      in(F::boolean("heads.metrics",
                    "Measure head diversity (X-Raying metrics, HUDS compactness, GCT terms) on a fixed held-out batch "
                    "into head_metrics.jsonl.")
             .def(true),
         &E::heads, &HS::metrics),
      in(F::integer("heads.metrics_every", "Measure every this many updates; 0 = at each validation.")
             .def(0)
             .at_least(0),
         &E::heads, &HS::metrics_every),
      in(F::integer("heads.metrics_sentences",
                    "Sentences in the held-out batch (a language model takes as many ~32-token sentences' worth of "
                    "tokens in blocks).")
             .def(64)
             .at_least(1)
             .at_most(L::kMaxSentences),
         &E::heads, &HS::metrics_sentences),

      section(F::section("prune",
                         "Removing heads after the first phase, then fine-tuning the smaller model (GHT-PS, and the "
                         "pruning baselines).")),
      in(F::enumeration("prune.method", enum_names<ght::PruneMethod>(),
                        "v2s: Voting-to-Stay (GHT-PS); importance: Michel et al. 2019; gates: Voita et al. 2019 "
                        "(needs heads.gates); none.")
             .def("none"),
         &E::prune, &P::method),
      in(F::enumeration(
             "prune.trigger", enum_names<ght::PruneTrigger>(),
             "When to prune: after prune.epoch epochs, or when the heads' feature-map cosine matrix on the held-out "
             "batch "
             "changes by less than prune.rho (relative Frobenius norm, mean over modules) between validations.")
             .def("epoch"),
         &E::prune, &P::trigger),
      in(F::integer("prune.epoch", "Epoch trigger: prune after this many epochs (0 = before any training).")
             .def(9)
             .at_least(0),
         &E::prune, &P::epoch),
      in(F::number("prune.rho",
                   "Shift trigger: threshold on the relative change of the heads' cosine matrix between validations.")
             .def(1e-3)
             .greater_than(0),
         &E::prune, &P::rho),
      in(F::enumeration("prune.keep", enum_names<ght::KeepRule>(),
                        "V2S decision: the most-voted head of each group (the paper), the top heads by votes (the "
                        "reference code), by "
                        "continuous score, random heads (ablation w/o HUDS), or a random member per group (ablation "
                        "w/o PS stay).")
             .def("per_group"),
         &E::prune, &P::keep),
      in(F::integer("prune.heads",
                    "Heads kept per module by top_c, score, random, importance and gates; 0 = heads.groups.")
             .def(0)
             .at_least(0)
             .at_most(L::kMaxHeads),
         &E::prune, &P::heads),
      in(F::integer("prune.vote_batches",
                    "Training batches of the voting (or importance) pass; 0 = the whole training set.")
             .def(0)
             .at_least(0),
         &E::prune, &P::vote_batches),
      in(F::boolean("prune.finetune_regularizer",
                    "Keep heads.regularizer on while fine-tuning the pruned model (the ablation "
                    "\"stage 1 & 2 GC\").")
             .def(false),
         &E::prune, &P::finetune_regularizer),
      in(F::enumeration("prune.finetune_schedule", enum_names<ght::FinetuneSchedule>(),
                        "How the pruned model is fine-tuned. continue (the authors' code): phase 1's optimizer state "
                        "(Adam's moments "
                        "of the kept heads), step counts and learning-rate schedule run on, update and epoch numbers "
                        "count on, and "
                        "both phases share train.max_updates and train.max_epochs, as a run without pruning does. "
                        "restart: a fresh "
                        "optimizer at the constant learning rate phase 1 ended with, counted from update 1, with the "
                        "prune.finetune_* "
                        "limits alone.")
             .def("continue"),
         &E::prune, &P::finetune_schedule),
      in(F::integer("prune.finetune_epochs",
                    "Fine-tuning: at most this many epochs (continue: after the epoch phase 1 stopped in, and "
                    "never past train.max_epochs).")
             .def(50)
             .at_least(1),
         &E::prune, &P::finetune_epochs),
      in(F::integer("prune.finetune_updates",
                    "Fine-tuning: at most this many updates; 0 = no limit of its own (continue: until "
                    "train.max_updates). Under continue it is also held back from phase 1, which stops "
                    "at train.max_updates minus this at the latest, so both phases fit the run's budget.")
             .def(0)
             .at_least(0),
         &E::prune, &P::finetune_updates),
      in(F::integer("prune.finetune_patience",
                    "Fine-tuning: stop after this many validations without improvement; 0 = off.")
             .def(3)
             .at_least(0),
         &E::prune, &P::finetune_patience),
      in(F::number("prune.finetune_minutes", "Fine-tuning: wall-clock limit of its own; 0 = none.")
             .def(0.0)
             .at_least(0),
         &E::prune, &P::finetune_minutes),
  };
}

} // namespace pillars::experiment_table
