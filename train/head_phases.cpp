// See head_phases.h.
#include "train/head_phases.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "base/atomic_file.h"
#include "base/log_file.h"
#include "base/special_tokens.h"
#include "ght/baselines.h"
#include "ght/prune.h"
#include "ght/voting.h"
#include "train/checkpoint.h"
#include "train/setup.h"

namespace pillars::train {

namespace fs = std::filesystem;

namespace {

// A copy written atomically (base/atomic_file.h): a full disk leaves the old file or none under
// `to`, never a partial one, and throws pillars::Error naming it.
void copy_if_exists(const fs::path& from, const fs::path& to) {
  if (!fs::exists(from)) return;
  std::ifstream in(from, std::ios::binary | std::ios::ate);
  std::string bytes(in ? static_cast<size_t>(in.tellg()) : 0, '\0');
  if (!in || !in.seekg(0) || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw Error(str_cat(from.string(), ": cannot read it to copy it to ", to.string()));
  io::atomic_write_file(to.string(), bytes);
}

// The heads to keep, by prune.method. In a data-parallel job every rank decides the same heads: the
// ranks vote (or sum importance) on shares of the batches and sum the tallies (ght/voting.h,
// ght/baselines.h); gates read the parameters, which are the same everywhere. Rank 0 alone writes
// votes.json or importance.json.
ght::HeadSelection choose_heads(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                const RunData& data, const std::string& run_dir, bool quiet, dist::Communicator& comm) {
  const int keep = static_cast<int>(e.prune.heads > 0 ? e.prune.heads : e.heads.groups);
  switch (e.prune.method) {
    case ght::PruneMethod::v2s: {
      ght::VoteSettings s;
      s.feature_map = e.heads.feature_map;
      s.groups = static_cast<int>(e.heads.groups);
      s.rule = e.prune.keep;
      s.keep = keep;
      s.seed = static_cast<uint64_t>(e.seed);
      s.max_batches = e.prune.vote_batches;
      const ght::VoteResult r =
          ght::vote([&] { return make_task(e, cfg, params, data, vote_context(e)); }, s, quiet, comm);
      if (comm.is_root())
        io::atomic_write_file((fs::path(run_dir) / "votes.json").string(), r.to_json().dump(1) + "\n");
      return r.selection();
    }
    case ght::PruneMethod::importance: {
      ght::ImportanceSettings s;
      s.batches = e.prune.vote_batches;
      s.seed = static_cast<uint64_t>(e.seed);
      const ght::HeadImportance importance = ght::head_importance(
          cfg, params,
          [&](ParamStore& p) { return make_task(e, cfg, p, data, importance_context(s.keep_label_smoothing)); }, s,
          comm);
      nlohmann::json j = {
          {"method", "importance"}, {"batches", importance.batches}, {"normalized", importance.normalized}};
      if (comm.is_root()) io::atomic_write_file((fs::path(run_dir) / "importance.json").string(), j.dump(1) + "\n");
      return ght::top_k_selection(importance.normalized, keep);
    }
    case ght::PruneMethod::gates:
      return ght::top_k_selection(ght::expected_gates(params, cfg), keep);
    case ght::PruneMethod::none:
      break;
  }
  throw Error("choose_heads: prune.method is \"none\"");
}

nlohmann::json prune_json(const std::string& from, const ght::PruneSummary& s) {
  nlohmann::json mods = nlohmann::json::array();
  for (const auto& [module, m] : s.modules)
    mods.push_back({{"module", module}, {"heads_before", m.first}, {"kept", m.second}});
  return {{"from", from},
          {"params_before", s.params_before},
          {"params_after", s.params_after},
          {"params_before_no_embeddings", s.params_before_no_embeddings},
          {"params_after_no_embeddings", s.params_after_no_embeddings},
          {"modules", mods}};
}

// ---- budgets and schedules of the two phases ----------------------------------------------------

bool continues(const Experiment& e) { return e.prune.finetune_schedule == ght::FinetuneSchedule::continue_; }

// Phase 1's limits: the experiment's, cut short by the epoch trigger (prune.epoch epochs) and, under
// "continue", by the updates left to fine-tuning: it stops at train.max_updates −
// prune.finetune_updates at the latest (train/experiment.cpp checks that this is ≥ 1).
Experiment phase1_experiment(const Experiment& e, bool prune) {
  Experiment e1 = e;
  if (!prune) return e1;
  if (e.prune.trigger == ght::PruneTrigger::epoch) e1.train.max_epochs = std::min(e.train.max_epochs, e.prune.epoch);
  if (continues(e) && e.train.max_updates > 0 && e.prune.finetune_updates > 0)
    e1.train.max_updates = e.train.max_updates - e.prune.finetune_updates;
  return e1;
}

// "restart": a fresh optimizer at the learning rate phase 1 ended with, held constant (no second
// warm-up), for the prune.finetune_* limits alone, counted from update 1.
Experiment restarted_finetune(const Experiment& e, const TrainerState& phase1_end) {
  Experiment e2 = e;
  e2.train.max_epochs = e.prune.finetune_epochs;
  e2.train.max_updates = e.prune.finetune_updates;
  e2.train.max_minutes = e.prune.finetune_minutes;
  e2.train.patience = e.prune.finetune_patience;
  if (phase1_end.updates > 0) {
    e2.optim.lr = make_schedule(e.optim, std::max<int64_t>(phase1_end.updates, 1))->lr(phase1_end.updates);
    e2.optim.schedule = Schedule::constant;
    e2.optim.warmup_updates = 0;
    e2.optim.min_lr = std::min(e2.optim.min_lr, e2.optim.lr);
    e2.optim.warmup_init_lr = std::min(e2.optim.warmup_init_lr, e2.optim.lr);
  }
  return e2;
}

// "continue": the optimizer and the schedule are phase 1's (train_with_heads passes the start and
// the schedule's budget); the limits are the run's, counted on from where phase 1 stopped:
//   updates  until train.max_updates in all, and at most prune.finetune_updates in phase 2 (0 = no cap);
//   epochs   the rest of the epoch phase 1 stopped in, then at most prune.finetune_epochs more,
//            never past train.max_epochs;
//   minutes, patience   prune.finetune_minutes and prune.finetune_patience, of phase 2 alone.
Experiment continued_finetune(const Experiment& e, const TrainerState& at) {
  Experiment e2 = e;
  int64_t last_update = e.train.max_updates; // 0 = no limit
  if (e.prune.finetune_updates > 0) {
    const int64_t cap = at.updates + e.prune.finetune_updates;
    last_update = last_update > 0 ? std::min(last_update, cap) : cap;
  }
  e2.train.max_updates = last_update;
  const int64_t begun_epochs = at.batch_in_epoch > 0 ? at.epoch : at.epoch - 1;
  e2.train.max_epochs = std::min(e.train.max_epochs, begun_epochs + e.prune.finetune_epochs);
  e2.train.max_minutes = e.prune.finetune_minutes;
  e2.train.patience = e.prune.finetune_patience;
  return e2;
}

// Phase 2's first state under "continue": phase 1's position, so that the update numbers, the batch
// order (a function of the seed and the epoch) and the dropout streams (of the seed and the update)
// run on as in a run without pruning. The rest starts afresh: phase 2 validates, and keeps the
// best checkpoints of, another model, on a clock of its own (prune.finetune_minutes).
TrainerState continued_position(const TrainerState& at) {
  TrainerState s;
  s.epoch = at.epoch;
  s.batch_in_epoch = at.batch_in_epoch;
  s.updates = at.updates;
  return s;
}

// Where phase 1 left the trainer, with its optimizer state: `pillars prune --from`'s checkpoint,
// phase 1's checkpoint_last (rank 0 wrote it at the end of phase 1; the other ranks of a job wait
// for it), or the very beginning when there was no phase 1 (prune.epoch 0).
TrainingStart phase1_end(const TrainingStart* from_checkpoint, bool phase1, const fs::path& last,
                         dist::Communicator& comm) {
  if (from_checkpoint) return *from_checkpoint;
  if (!phase1) return {};
  comm.barrier();
  LoadedCheckpoint c = load_checkpoint(last.string());
  return {c.state, std::move(c.optimizer_state)};
}

// The optimizer of the pruned model under "continue": phase 1's state with the kept heads' slices
// of every buffer (ght/prune.h), loaded into an optimizer of the experiment's kind, which checks
// every entry. Null when phase 1 left no state.
std::unique_ptr<optim::Optimizer> pruned_optimizer(const Experiment& e, const TransformerConfig& cfg,
                                                   const optim::NamedTensors& state, const ght::HeadSelection& keep) {
  if (state.empty()) return nullptr;
  auto optimizer = make_optimizer(e.optim);
  try {
    optimizer->load_state(ght::prune_optimizer_state(cfg, state, keep));
  } catch (const InputError& err) {
    throw InputError(
        str_cat("prune: the trained model's optimizer state does not fit the experiment's optim section (\"",
                enum_name(e.optim.optimizer), "\"): ", err.what()));
  }
  return optimizer;
}

} // namespace

std::vector<std::string> train_with_heads(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                          const RunData& data, const TrainOptions& base,
                                          const TrainingStart* from_checkpoint) {
  const std::string run_dir = base.run_dir;
  const bool prune = e.prune.method != ght::PruneMethod::none;
  const fs::path pruned_dir = fs::path(run_dir) / kPrunedDir;
  const fs::path prune_file = fs::path(run_dir) / "prune.json";
  const fs::path pruned_checkpoint = fs::path(run_dir) / "checkpoint_pruned.safetensors";
  const fs::path phase1_last = fs::path(run_dir) / "checkpoint_last.safetensors";
  std::vector<std::string> to_evaluate;

  // ---- phase 1 ----------------------------------------------------------------------------------
  const Experiment e1 = phase1_experiment(e, prune);
  const bool phase1 =
      from_checkpoint == nullptr && !(prune && e.prune.trigger == ght::PruneTrigger::epoch && e.prune.epoch == 0);
  if (from_checkpoint && !prune) throw InputError("pillars prune: the experiment's \"prune.method\" is \"none\"");
  if (phase1 && !(prune && fs::exists(prune_file))) {
    TrainOptions to = base;
    to.phase = "train";
    if (continues(e)) to.schedule_budget = e.train; // one schedule over both phases
    train_phase(e, e1, cfg, params, data, step_context(e), to, e.prune.trigger == ght::PruneTrigger::shift);
  }
  // (A model trained with hard-concrete gates is only meaningful with its gates, which decoding does
  // not apply: its first phase is evaluated after pruning, in pruned/.)
  if (phase1 && e.heads.gates == ght::HeadGates::none) to_evaluate.push_back(run_dir);
  if (!prune) return to_evaluate;

  // ---- prune ------------------------------------------------------------------------------------
  // Every rank of a data-parallel job removes the same heads; rank 0 alone writes the files, and the
  // others wait for them before the fine-tuning (which may read them back on a resume).
  // checkpoint_pruned holds the pruned model, phase 1's end state and, under "continue", phase 1's
  // optimizer state sliced to the kept heads: all that phase 2 starts from.
  dist::Communicator& comm = base.communicator ? *base.communicator : dist::single_process();
  ght::PrunedModel ps;
  TrainingStart pruned_start;
  if (!fs::exists(prune_file)) {
    TrainingStart end = phase1_end(from_checkpoint, phase1, phase1_last, comm);
    const ght::HeadSelection keep = choose_heads(e, cfg, params, data, run_dir, base.quiet, comm);
    ps = ght::prune_heads(cfg, params, keep);
    const ght::PruneSummary summary = ght::summarize_pruning(cfg, params, ps, keep);
    const std::unique_ptr<optim::Optimizer> optimizer =
        continues(e) ? pruned_optimizer(e, cfg, end.optimizer_state, keep) : nullptr;
    pruned_start.state = end.state;
    if (optimizer) pruned_start.optimizer_state = optimizer->state();
    if (comm.is_root()) {
      save_checkpoint(pruned_checkpoint.string(), ps.cfg, ps.params, optimizer.get(), end.state, base.checkpoint_extra);
      io::atomic_write_file(prune_file.string(), prune_json(pruned_checkpoint.string(), summary).dump(1) + "\n");
    }
    if (!base.quiet)
      std::fprintf(stderr, "prune: %lld → %lld parameters without embeddings (%.1f%%); %s\n",
                   static_cast<long long>(summary.params_before_no_embeddings),
                   static_cast<long long>(summary.params_after_no_embeddings),
                   100.0 * (1.0 - static_cast<double>(summary.params_after_no_embeddings) /
                                      static_cast<double>(summary.params_before_no_embeddings)),
                   pruned_checkpoint.c_str());
    // The optimizer's buffers are views of its live state: phase 2 gets copies.
    for (auto& [name, t] : pruned_start.optimizer_state) t = t.clone();
  } else {
    LoadedCheckpoint c = load_checkpoint(pruned_checkpoint.string());
    ps.cfg = c.config;
    ps.params = std::move(c.params);
    pruned_start = {c.state, std::move(c.optimizer_state)};
  }

  // ---- phase 2: fine-tune the pruned model in run_dir/pruned -------------------------------------
  // "continue" needs phase 1's optimizer state; a trained model without one (`pillars prune --from`
  // an averaged or pruned checkpoint, or a run pruned before checkpoint_pruned kept it) is
  // fine-tuned as "restart" does, and pruned/config.json says so.
  const bool fallback = continues(e) && pruned_start.state.updates > 0 && pruned_start.optimizer_state.empty();
  const bool continue_run = continues(e) && !fallback;
  Experiment e2 = continue_run ? continued_finetune(e, pruned_start.state) : restarted_finetune(e, pruned_start.state);
  if (fallback) {
    e2.prune.finetune_schedule = ght::FinetuneSchedule::restart;
    if (!base.quiet)
      std::fprintf(stderr,
                   "note: %s holds no optimizer state to continue from (was the model averaged, or pruned before?): "
                   "fine-tuning restarts the optimizer at the learning rate training ended with, as "
                   "prune.finetune_schedule \"restart\" does\n",
                   from_checkpoint ? "the checkpoint given with --from" : pruned_checkpoint.c_str());
  }
  if (comm.is_root()) {
    fs::create_directories(pruned_dir);
    for (const char* f : {"pipeline.json", "dict.txt", "bpe.codes"})
      copy_if_exists(fs::path(run_dir) / f, pruned_dir / f);
    io::atomic_write_file((pruned_dir / "config.json").string(), to_json(e2).dump(2) + "\n");
  }
  comm.barrier();

  TrainOptions to = base;
  to.run_dir = pruned_dir.string();
  to.phase = "finetune";
  to.resume = fs::exists(pruned_dir / "checkpoint_last.safetensors");
  if (continue_run) {
    to.start = TrainingStart{continued_position(pruned_start.state), std::move(pruned_start.optimizer_state)};
    to.schedule_budget = e.train;
    if (!base.quiet && !to.resume)
      std::fprintf(stderr,
                   "finetune: phase 1's optimizer and learning-rate schedule continue from update %lld (epoch %lld); "
                   "the run ends at update %s, epoch %lld at the latest\n",
                   static_cast<long long>(pruned_start.state.updates), static_cast<long long>(pruned_start.state.epoch),
                   e2.train.max_updates > 0 ? std::to_string(e2.train.max_updates).c_str() : "(no limit)",
                   static_cast<long long>(e2.train.max_epochs));
  }
  train_phase(e, e2, ps.cfg, ps.params, data, finetune_context(e), to);
  to_evaluate.push_back(pruned_dir.string());
  return to_evaluate;
}

} // namespace pillars::train
