// The settings of the head-level methods, as typed values: the experiment file's `heads` and
// `prune` sections (read once, at load time, with the words below: train/experiment_fields_heads.cpp).
// ght/ needs nothing else from an experiment, so it depends on no training code.
//
// docs/METHOD.md explains each method; `pillars schema --markdown` documents each field.
#pragma once
#include <cstdint>

#include "base/enum_names.h"

namespace pillars::ght {

// The per-head feature map that heads are clustered and compared by (docs/METHOD.md §2).
enum class FeatureMap : uint8_t { V, A, O };
constexpr auto enum_table(FeatureMap) {
  return enum_words<FeatureMap>({{FeatureMap::V, "V"}, {FeatureMap::A, "A"}, {FeatureMap::O, "O"}});
}

// The loss added per attention module while training.
enum class Regularizer : uint8_t { none, gct, disagreement };
constexpr auto enum_table(Regularizer) {
  return enum_words<Regularizer>(
      {{Regularizer::none, "none"}, {Regularizer::gct, "gct"}, {Regularizer::disagreement, "disagreement"}});
}

// GCT's loss: metric = Eq. 4(B), the paper's; classification = Eq. 4(A).
enum class GctVariant : uint8_t { metric, classification };
constexpr auto enum_table(GctVariant) {
  return enum_words<GctVariant>({{GctVariant::metric, "metric"}, {GctVariant::classification, "classification"}});
}

// How Σ_m R_m joins the task loss: divided by the batch's target tokens, or as it is.
enum class GctScale : uint8_t { per_token, per_batch };
constexpr auto enum_table(GctScale) {
  return enum_words<GctScale>({{GctScale::per_token, "per_token"}, {GctScale::per_batch, "per_batch"}});
}

// Li et al. (2018)'s disagreement, named by what it compares: values (subspace), attention
// probabilities (position) or head outputs (output). Each is a feature map (feature_map_of).
enum class Disagreement : uint8_t { subspace, position, output };
constexpr auto enum_table(Disagreement) {
  return enum_words<Disagreement>(
      {{Disagreement::subspace, "subspace"}, {Disagreement::position, "position"}, {Disagreement::output, "output"}});
}
constexpr FeatureMap feature_map_of(Disagreement d) {
  switch (d) {
    case Disagreement::subspace:
      return FeatureMap::V;
    case Disagreement::position:
      return FeatureMap::A;
    case Disagreement::output:
      return FeatureMap::O;
  }
  return FeatureMap::V;
}

// Learned head gates: none, or Voita et al. (2019)'s hard-concrete gates with an L0 penalty.
enum class HeadGates : uint8_t { none, hard_concrete };
constexpr auto enum_table(HeadGates) {
  return enum_words<HeadGates>({{HeadGates::none, "none"}, {HeadGates::hard_concrete, "hard_concrete"}});
}

// How heads are chosen for removal after the first phase.
enum class PruneMethod : uint8_t { none, v2s, importance, gates };
constexpr auto enum_table(PruneMethod) {
  return enum_words<PruneMethod>({{PruneMethod::none, "none"},
                                  {PruneMethod::v2s, "v2s"},
                                  {PruneMethod::importance, "importance"},
                                  {PruneMethod::gates, "gates"}});
}

// When the first phase ends and pruning starts: after prune.epoch epochs, or when the heads'
// feature-map geometry on the held-out batch settles (prune.rho).
enum class PruneTrigger : uint8_t { epoch, shift };
constexpr auto enum_table(PruneTrigger) {
  return enum_words<PruneTrigger>({{PruneTrigger::epoch, "epoch"}, {PruneTrigger::shift, "shift"}});
}

// How fine-tuning the pruned model is scheduled (docs/METHOD.md §5, train/head_phases.h):
// continue = phase 1's optimizer state (the kept heads' slices of Adam's moments), step counts and
// learning-rate schedule run on, and both phases share the run's budget (train.max_updates,
// train.max_epochs), as the authors' code does; restart = a fresh optimizer at a constant learning
// rate (the one phase 1 ended with), with budgets of its own (prune.finetune_*).
// ("continue" is a C++ keyword, hence the underscore.)
enum class FinetuneSchedule : uint8_t { continue_, restart };
constexpr auto enum_table(FinetuneSchedule) {
  return enum_words<FinetuneSchedule>(
      {{FinetuneSchedule::continue_, "continue"}, {FinetuneSchedule::restart, "restart"}});
}

// V2S's decision rule (docs/METHOD.md §5).
enum class KeepRule : uint8_t { per_group, top_c, score, random, random_member };
constexpr auto enum_table(KeepRule) {
  return enum_words<KeepRule>({{KeepRule::per_group, "per_group"},
                               {KeepRule::top_c, "top_c"},
                               {KeepRule::score, "score"},
                               {KeepRule::random, "random"},
                               {KeepRule::random_member, "random_member"}});
}

// The experiment's `heads` section: the regularizer, gates and measurements of the first phase.
struct HeadsSettings {
  Regularizer regularizer{};
  FeatureMap feature_map{};
  int64_t groups{};       // C, HUDS groups per module
  double alpha{}, beta{}; // GCT weights: homogenization, diversification
  GctVariant gct_variant{};
  GctScale gct_scale{};
  Disagreement disagreement{};
  double lambda{};   // disagreement weight
  double drophead{}; // Scheduled DropHead's peak rate; 0 = off
  HeadGates gates{};
  double l0_lambda{};          // weight of the gates' L0 penalty
  bool metrics{};              // measure head diversity on a held-out batch
  int64_t metrics_every{};     // ... every this many updates (0 = at each validation)
  int64_t metrics_sentences{}; // size of the held-out batch
  bool operator==(const HeadsSettings&) const = default;
};

// The experiment's `prune` section: removing heads after the first phase, then fine-tuning.
struct PruneSettings {
  PruneMethod method{};
  PruneTrigger trigger{};
  int64_t epoch{}; // epoch trigger: prune after this many epochs (0 = before training)
  double rho{};    // shift trigger: threshold on the heads' geometry change
  KeepRule keep{};
  int64_t heads{};             // heads kept per module (0 = heads.groups)
  int64_t vote_batches{};      // training batches voted on (0 = all)
  bool finetune_regularizer{}; // keep the head regularizer on while fine-tuning (an ablation)
  FinetuneSchedule finetune_schedule{};
  int64_t finetune_epochs{}, finetune_updates{}, finetune_patience{};
  double finetune_minutes{};
  bool operator==(const PruneSettings&) const = default;
};

} // namespace pillars::ght
