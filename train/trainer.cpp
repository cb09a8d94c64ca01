// The training loop; see trainer.h.
#include "train/trainer.h"

#include "base/build_info.h"
#include "base/run_guard.h"

#include "base/splitmix64.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

#include "base/error.h"
#include "engine/optim/clip.h"
#include "engine/optim/loops.h"
#include "train/data_parallel.h"
#include "train/device_scope.h"
#include "train/gradient_buckets.h"
#include "train/head_metrics_log.h"
#include "train/pass_list.h"
#include "train/progress.h"
#include "train/run_log.h"
#include "train/setup.h"

namespace pillars::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The dropout seed of update u: a SplitMix64 mix of (experiment seed, u), so neighboring
// updates get unrelated Philox streams.
uint64_t update_seed(uint64_t seed, int64_t update) { return mix_seeds(seed, static_cast<uint64_t>(update)); }

class Loop {
 public:
  Loop(const Experiment& e, const TransformerConfig& cfg, ParamStore& params, steps::TrainingTask& task,
       const TrainOptions& o)
      : e_(e),
        cfg_(cfg),
        params_(params),
        task_(task),
        o_(o),
        comm_(o.communicator ? *o.communicator : dist::single_process()),
        voice_(comm_.is_root()),
        log_((fs::path(o.run_dir) / "log.jsonl").string(), o.phase, voice_),
        optimizer_(make_optimizer(e.optim)),
        bf16_weights_(e, o.bf16_weight_cache) {
    batches_per_epoch_ = task.batches_per_epoch();
    // One update takes update_freq batches on each rank (data_parallel.h).
    const int64_t batches_per_update = e.train.update_freq * comm_.size();
    const int64_t updates_per_epoch = (batches_per_epoch_ + batches_per_update - 1) / batches_per_update;
    const auto planned = [updates_per_epoch](const TrainSettings& t) {
      return t.max_updates > 0 ? std::min(t.max_epochs * updates_per_epoch, t.max_updates)
                               : t.max_epochs * updates_per_epoch;
    };
    planned_updates_ = planned(e.train);
    schedule_ = make_schedule(e.optim, o.schedule_budget ? planned(*o.schedule_budget) : planned_updates_);
    // Gradients accumulated over several batches (update_freq > 1), or summed over the ranks of a
    // data-parallel job: in buckets, as the backward makes them (gradient_buckets.h; in one process
    // the sums over one rank are the buckets themselves).
    if (comm_.size() > 1 || e.train.update_freq > 1) {
      if (comm_.size() > 1 && e.train.device == Device::cuda)
        device_sums_ = std::make_unique<dist::DeviceSums>(comm_); // NCCL
      buckets_ = std::make_unique<GradientBuckets>(comm_, params_, e.parallel.bucket_mb,
                                                   static_cast<int>(e.parallel.zero_stage), e.parallel.overlap,
                                                   device_sums_.get());
      task_.steps().set_gradient_observer(buckets_.get());
    }
  }
  ~Loop() {
    if (buckets_) task_.steps().set_gradient_observer(nullptr);
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  TrainerOutcome run() {
    if (o_.resume)
      restore();
    else if (o_.start)
      start_from(*o_.start);
    state_.finished = false, state_.stop_reason.clear();
    session_start_ = Clock::now();
    elapsed_at_start_ = state_.elapsed_seconds;
    // A resumed run that already meets a stopping rule (the same limits as before) does nothing.
    if (const std::string reason = limit_reached(); !reason.empty()) stop(reason);
    if (e_.train.patience > 0 && state_.bad_validations >= e_.train.patience) stop("patience");
    log_.write({{"type", "start"},
                {"resume", o_.resume},
                {"epoch", state_.epoch},
                {"update", state_.updates},
                {"batches_per_epoch", batches_per_epoch_},
                {"planned_updates", planned_updates_},
                {"parameters", params_.numel()},
                {"passes", task_.steps().training_passes()},
                {"machine", machine_record()}});
    while (!state_.finished) {
      if (state_.epoch > e_.train.max_epochs) {
        stop("max_epochs");
        break;
      }
      train_epoch();
      if (state_.finished) break;
      (void)agreed_limit(); // a stop signal that came during the epoch's last update
      if (stop_signal_) break;
      // The epoch is complete.
      const bool validate_now = (state_.epoch % e_.train.validate_every) == 0;
      ++state_.epoch, state_.batch_in_epoch = 0;
      if (validate_now && state_.last_validated_update != state_.updates)
        validate_and_checkpoint();
      else
        save("checkpoint_last.safetensors", true);
    }
    if (stop_signal_) stopped_by(stop_signal_); // saves, logs, throws
    // Stopped inside an epoch or without a validation of the final parameters: validate them.
    if (state_.last_validated_update != state_.updates) validate_and_checkpoint();
    save("checkpoint_last.safetensors", true);
    if (e_.train.average_best > 0) average_best();
    log_.write({{"type", "end"},
                {"reason", state_.stop_reason},
                {"update", state_.updates},
                {"elapsed_seconds", state_.elapsed_seconds}},
               /*durable=*/true);
    if (!quiet())
      std::fprintf(stderr, "stopped: %s after %lld updates (%s)\n", state_.stop_reason.c_str(),
                   static_cast<long long>(state_.updates), duration(state_.elapsed_seconds).c_str());
    outcome_.state = state_;
    return std::move(outcome_);
  }

 private:
  bool quiet() const { return o_.quiet || !voice_; } // only rank 0 prints

  // Where this stretch of the run computes, and with what arithmetic: a run's numbers depend on
  // the CPU kernels' instruction set, the thread count, the device and the precision, so a study
  // pairs only runs that agree on them (study/table.h). Every start line (a resume too) has one.
  nlohmann::json machine_record() const {
    nlohmann::json m = train::machine_record(e_.train.device);
    m["precision"] = enum_name(e_.train.precision);
    m["ranks"] = comm_.size();
    m["commit"] = build_commit();
    return m;
  }

  // The stopping rules every rank must agree on, checked before every update: a stop signal on any
  // rank, and rank 0's clock for max_minutes (the ranks' clocks differ a little). One small
  // all-reduce in a data-parallel job; in one process just the local checks.
  // Whether a periodic save (save_every_minutes) is due is agreed the same way, by rank 0's clock,
  // since under ZeRO-1 every rank takes part in a save.
  std::string agreed_limit() {
    const std::string local = limit_reached();
    if (comm_.size() == 1) {
      stop_signal_ = stop_signal();
      save_due_ = periodic_save_due();
      return local;
    }
    int64_t flags[4] = {stop_signal(), local == "max_updates", voice_ && local == "max_minutes",
                        voice_ && periodic_save_due()};
    comm_.all_reduce_max(flags, 4);
    stop_signal_ = static_cast<int>(flags[0]);
    save_due_ = flags[3] != 0;
    return flags[1] ? "max_updates" : flags[2] ? "max_minutes" : "";
  }
  bool periodic_save_due() const {
    return e_.train.save_every_minutes > 0 && elapsed() - last_save_elapsed_ >= 60.0 * e_.train.save_every_minutes;
  }

  double elapsed() const {
    return elapsed_at_start_ + std::chrono::duration<double>(Clock::now() - session_start_).count();
  }

  // The update and time limits, checked before every update: "" while training may go on.
  std::string limit_reached() const {
    if (e_.train.max_updates > 0 && state_.updates >= e_.train.max_updates) return "max_updates";
    if (e_.train.max_minutes > 0 && elapsed() >= 60.0 * e_.train.max_minutes) return "max_minutes";
    return "";
  }

  // A stop signal (base/run_guard.h): the update in progress has finished; save where we are (the
  // position in the epoch included, so --resume continues exactly), log it, and leave without
  // validating, averaging or evaluating.
  [[noreturn]] void stopped_by(int sig) {
    state_.stop_reason = signal_name(sig);
    save("checkpoint_last.safetensors", true);
    log_.write({{"type", "end"},
                {"reason", state_.stop_reason},
                {"update", state_.updates},
                {"elapsed_seconds", state_.elapsed_seconds}},
               /*durable=*/true);
    // In a job, every rank leaves only once rank 0 has saved and logged: a launcher ends the whole job
    // as soon as one rank exits non-zero (Open MPI's mpirun; srun --kill-on-bad-exit), and 128 +
    // signal is non-zero, so a rank that left first would kill rank 0 in the middle of its save.
    comm_.barrier();
    const std::string path = (fs::path(o_.run_dir) / "checkpoint_last.safetensors").string();
    throw Stopped(sig, str_cat("stopped by ", signal_name(sig), " after update ", state_.updates, "; ", path,
                               " holds it (resume with --resume)"));
  }

  void stop(const std::string& reason) {
    state_.finished = true;
    state_.stop_reason = reason;
  }

  void restore() {
    const std::string path = (fs::path(o_.run_dir) / "checkpoint_last.safetensors").string();
    if (!fs::exists(path)) throw InputError(str_cat("--resume: ", path, " does not exist (nothing to resume)"));
    LoadedCheckpoint c = load_checkpoint(path); // its state's fields each in range (checkpoint.h)
    if (c.optimizer_state.empty())
      throw InputError(str_cat("--resume: ", path, " has no optimizer state (an averaged or pruned model?)"));
    // The position must lie within an epoch of this experiment (its data cannot change on resume):
    // the loop would index the epoch's batches from there.
    if (c.state.batch_in_epoch > batches_per_epoch_)
      throw InputError(str_cat("--resume: ", path, ": \"pillars.state\" field \"batch_in_epoch\" is ",
                               c.state.batch_in_epoch, ", but an epoch of this experiment has ", batches_per_epoch_,
                               " batches (a damaged or edited checkpoint)"));
    for (const std::string& name : params_.names()) {
      if (!c.params.contains(name) || c.params.get(name).shape() != params_.get(name).shape())
        throw InputError(str_cat("--resume: ", path, ": parameter \"", name,
                                 "\" is missing or has another shape than the "
                                 "experiment's model (was the model section changed?)"));
      params_.get(name).copy_from(c.params.get(name));
    }
    try {
      optimizer_->load_state(c.optimizer_state);
    } catch (const InputError& err) {
      throw InputError(str_cat("--resume: ", path, ": optimizer state: ", err.what()));
    }
    state_ = c.state;
  }

  // A new session that continues another's training (TrainOptions::start): its position, and its
  // optimizer state when it has one (moved to the parameters' device at the first update).
  void start_from(const TrainingStart& start) {
    state_ = start.state;
    if (start.optimizer_state.empty()) return;
    try {
      optimizer_->load_state(start.optimizer_state);
    } catch (const InputError& err) {
      throw InputError(str_cat(o_.run_dir, ": the optimizer state to continue from: ", err.what()));
    }
  }

  void train_epoch() {
    const std::vector<steps::Batch> batches = task_.epoch(static_cast<uint64_t>(e_.seed), state_.epoch);
    window_.restart();
    while (state_.batch_in_epoch < static_cast<int64_t>(batches.size())) {
      if (const std::string reason = agreed_limit(); !reason.empty()) return stop(reason);
      if (stop_signal_) return stop(signal_name(stop_signal_)); // after a whole update, never inside one
      update(batches);
      if (save_due_) save("checkpoint_last.safetensors", true); // due by the clock before the update
    }
  }

  // One optimizer update from the next update_freq batches of the epoch (on each of the job's
  // ranks: data_parallel.h).
  void update(const std::vector<steps::Batch>& batches) {
    const int64_t k = std::min<int64_t>(e_.train.update_freq * comm_.size(),
                                        static_cast<int64_t>(batches.size()) - state_.batch_in_epoch);
    const int64_t u = state_.updates + 1;
    double loss_sum = 0;
    int64_t tokens = 0;
    task_.steps().set_progress(u, static_cast<double>(u) / static_cast<double>(std::max<int64_t>(planned_updates_, 1)));
    std::vector<int64_t> tokens_of(static_cast<size_t>(k)); // the work of each of the update's batches
    for (int64_t j = 0; j < k; ++j) {
      const steps::Batch& b = batches[static_cast<size_t>(state_.batch_in_epoch + j)];
      tokens_of[static_cast<size_t>(j)] = static_cast<int64_t>(b.indices.size()) * (b.Ts + b.Tt);
    }
    const std::vector<int64_t> mine = batches_of_rank(tokens_of, comm_.rank(), comm_.size());
    // CPU bf16: the weights stay fixed until the optimizer step, so the update's products share
    // one bf16 rounding of each (and one packing per layout) instead of making their own. The
    // scope ends before the step writes the weights; the next update rounds the new values.
    std::optional<cpu::ScopedBf16Weights> bf16_weights = bf16_weights_.install(params_);
    if (mine.empty()) { // the epoch's last update may leave a rank without a batch: it sends zeros
      buckets_->next_batch(true, true, /*counted=*/false);
      int64_t ignored = 0;
      (void)task_.train(batches[static_cast<size_t>(state_.batch_in_epoch)], 0, ignored);
    }
    for (size_t m = 0; m < mine.size(); ++m) {
      const int64_t j = mine[m];
      if (buckets_) buckets_->next_batch(m == 0, m + 1 == mine.size());
      int64_t batch_tokens = 0;
      const float loss = task_.train(batches[static_cast<size_t>(state_.batch_in_epoch + j)],
                                     update_seed(update_seed(static_cast<uint64_t>(e_.seed), u), j), batch_tokens);
      if (!std::isfinite(loss)) {
        const fs::path last = fs::path(o_.run_dir) / "checkpoint_last.safetensors";
        throw Error(str_cat("training loss is ", loss, " at update ", u, " (epoch ", state_.epoch, "); stopped. ",
                            fs::exists(last) ? "The last good checkpoint is " + last.string() + " (untouched)"
                                             : "No checkpoint was written yet (checkpoint_last does not exist)",
                            ". Lower optim.lr or set optim.clip_norm"));
      }
      loss_sum += static_cast<double>(loss) * static_cast<double>(batch_tokens);
      tokens += batch_tokens;
    }
    bf16_weights.reset(); // before the step: the optimizer writes the weights
    const float lr = schedule_->lr(u);
    if (buckets_)
      step_from_buckets(loss_sum, tokens, lr);
    else { // one process, one batch per update: the step's own gradients
      std::vector<optim::ParamSlot>& slots = task_.steps().slots();
      if (e_.optim.clip_norm > 0) optim::clip_grad_norm(slots, static_cast<float>(e_.optim.clip_norm));
      optimizer_->step(slots, lr);
    }
    state_.updates = u;
    state_.batch_in_epoch += k;
    const double mean_loss = loss_sum / static_cast<double>(std::max<int64_t>(tokens, 1));
    outcome_.losses.push_back(static_cast<float>(mean_loss));
    window_.add(loss_sum, tokens);
    if (!quiet()) first_updates_.after_update(tokens, state_.updates, planned_updates_);
    if (state_.updates % e_.train.log_every == 0) progress(lr);
    if (o_.after_update && voice_) o_.after_update(state_);
  }

  // The end of an update whose gradients are in buckets (gradient_buckets.h): wait for the buckets'
  // sums, add up the ranks' losses and tokens, divide by the tokens (the gradient of the mean loss
  // over all target tokens of the update), then step the parameters this rank owns (all of them at
  // ZeRO stage 0) and, under ZeRO-1, receive the others' from their owners. loss_sum and tokens
  // become the job's.
  void step_from_buckets(double& loss_sum, int64_t& tokens, float lr) {
    buckets_->finish();
    double totals[2] = {loss_sum, static_cast<double>(tokens)};
    comm_.all_reduce_sum(totals, 2);
    loss_sum = totals[0], tokens = static_cast<int64_t>(totals[1]);
    buckets_->divide(static_cast<float>(tokens));
    if (e_.optim.clip_norm > 0) buckets_->clip_grad_norm(static_cast<float>(e_.optim.clip_norm));
    std::vector<optim::ParamSlot> owned = buckets_->owned();
    optimizer_->step(owned, lr);
    buckets_->share_parameters();
    if (e_.parallel.zero_stage == 1 && !shed_optimizer_state_) { // a resumed run loaded every parameter's state
      for (const std::string& name : params_.names())
        if (!buckets_->owns(name)) optimizer_->forget(name);
      shed_optimizer_state_ = true;
    }
  }

  void progress(float lr) {
    const double now = elapsed();
    const WindowPace pace = window_.pace();
    // ETA: the remaining planned updates at this window's pace, or the time limit if sooner.
    double eta = static_cast<double>(std::max<int64_t>(0, planned_updates_ - state_.updates)) * pace.seconds_per_update;
    if (e_.train.max_minutes > 0) eta = std::min(eta, std::max(0.0, 60.0 * e_.train.max_minutes - now));
    nlohmann::json line = {{"type", "train"},
                           {"epoch", state_.epoch},
                           {"update", state_.updates},
                           {"loss", pace.loss},
                           {"lr", lr},
                           {"tokens_per_s", pace.tokens_per_second},
                           {"elapsed_seconds", now}};
    for (const auto& [key, mean] : task_.steps().take_terms())
      line[key] = mean; // the passes' terms, e.g. gct_regularizer
    log_.write(line);
    if (!quiet()) print_progress(state_.epoch, state_.updates, pace, lr, now, eta);
    window_.restart();
  }

  ValidScores validate() {
    ValidScores v;
    const auto [nll, tokens] = task_.valid_nll();
    v.loss = nll / static_cast<double>(std::max<int64_t>(tokens, 1));
    v.ppl = std::exp(v.loss);
    // Decoding runs where the parameters are (a GPU run decodes on the GPU: decode/step_decoder.h).
    if (o_.valid_bleu) v.bleu = o_.valid_bleu(cfg_, params_);
    if (o_.valid_rouge) v.rouge = o_.valid_rouge(cfg_, params_);
    return v;
  }

  // The validation score where higher is better.
  double score_of(const ValidScores& v) const {
    switch (e_.train.best_metric) {
      case BestMetric::loss:
        return -v.loss;
      case BestMetric::ppl:
        return -v.ppl;
      case BestMetric::bleu:
        if (!v.bleu)
          throw InputError("train.best_metric is \"bleu\" but validation computes no BLEU (task or train.valid_bleu)");
        return *v.bleu;
      case BestMetric::rouge:
        if (!v.rouge) throw InputError("train.best_metric is \"rouge\" but validation computes no ROUGE");
        return *v.rouge;
    }
    return 0;
  }

  // Rank 0 validates and saves; what it decided (the best score, patience, a stop) reaches the
  // other ranks with its state.
  void validate_and_checkpoint() {
    gather_optimizer(); // for checkpoint_last, written below by rank 0
    if (voice_) validate_and_checkpoint_here();
    share_state(comm_, state_);
  }

  void validate_and_checkpoint_here() {
    const auto t0 = Clock::now();
    const ValidScores v = validate();
    state_.last_validated_update = state_.updates;
    outcome_.last_valid = v;
    const double score = score_of(v);
    const bool improved = !state_.has_best || score > state_.best_valid;
    if (improved)
      state_.best_valid = score, state_.has_best = true, state_.bad_validations = 0;
    else
      ++state_.bad_validations;
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    nlohmann::json j = {{"type", "valid"},
                        {"epoch", state_.epoch - (state_.batch_in_epoch == 0 ? 1 : 0)},
                        {"update", state_.updates},
                        {"loss", v.loss},
                        {"ppl", v.ppl},
                        {"best", improved},
                        {"seconds", took},
                        {"elapsed_seconds", elapsed()}};
    if (v.bleu) j["bleu"] = *v.bleu;
    if (v.rouge) j["rouge"] = *v.rouge;
    log_.write(j);
    if (!o_.quiet) {
      std::string extra;
      if (v.bleu) extra += str_cat(" | bleu ", std::round(*v.bleu * 100) / 100);
      if (v.rouge) extra += str_cat(" | rouge ", std::round(*v.rouge * 100) / 100);
      std::fprintf(stderr, "valid | update %6lld | loss %7.4f | ppl %8.2f%s%s (%.1fs)\n",
                   static_cast<long long>(state_.updates), v.loss, v.ppl, extra.c_str(), improved ? " | best" : "",
                   took);
    }
    if (e_.train.patience > 0 && state_.bad_validations >= e_.train.patience) stop("patience");
    if (o_.after_validation)
      if (const std::string reason = o_.after_validation(state_, v); !reason.empty()) stop(reason);
    if (improved) write("checkpoint_best.safetensors", false);
    keep_for_averaging(score);
    write("checkpoint_last.safetensors", true);
  }

  // Keeps the keep_best best validated parameter sets as checkpoint_eE_uU.safetensors.
  void keep_for_averaging(double score) {
    const int64_t keep = std::max(e_.train.keep_best, e_.train.average_best);
    if (keep <= 0) return;
    const std::string name = str_cat("checkpoint_e", state_.epoch - (state_.batch_in_epoch == 0 ? 1 : 0), "_u",
                                     state_.updates, ".safetensors");
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [n, s] : state_.kept) ranked.push_back({s, n});
    if (static_cast<int64_t>(ranked.size()) >= keep) {
      std::sort(ranked.begin(), ranked.end());
      if (score <= ranked.front().first) return; // worse than every kept one
      // Deleted only after checkpoint_last (which lists the kept files) no longer names it.
      pending_removal_.push_back(ranked.front().second);
      state_.kept.erase(ranked.front().second);
    }
    state_.kept[name] = score;
    write(name, false);
  }

  void average_best() {
    if (!voice_) return;
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [n, s] : state_.kept) ranked.push_back({s, n});
    std::sort(ranked.rbegin(), ranked.rend());
    std::vector<std::string> paths;
    for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < e_.train.average_best; ++i)
      paths.push_back((fs::path(o_.run_dir) / ranked[i].second).string());
    if (paths.empty()) return;
    TransformerConfig cfg;
    ParamStore avg = average_checkpoints(paths, &cfg);
    nlohmann::json extra = o_.checkpoint_extra;
    extra["averaged"] = paths;
    save_checkpoint((fs::path(o_.run_dir) / "checkpoint_avg.safetensors").string(), cfg, avg, nullptr, state_, extra);
    log_.write({{"type", "average"}, {"checkpoints", paths}}, /*durable=*/true);
    if (!o_.quiet) std::fprintf(stderr, "averaged %zu checkpoints into checkpoint_avg.safetensors\n", paths.size());
  }

  // Every rank calls save() at the same points (under ZeRO-1 the optimizer state is gathered from
  // all of them); rank 0 alone writes.
  void save(const std::string& name, bool with_optimizer) {
    if (with_optimizer) gather_optimizer();
    write(name, with_optimizer);
  }

  // ZeRO-1: rank 0 assembles the whole optimizer state, which the next write() with the optimizer
  // saves. Every rank calls it. Without sharding (or before the first update has laid out the
  // shards, when every rank still holds the whole state) rank 0's own optimizer is the whole one.
  void gather_optimizer() {
    whole_optimizer_.reset();
    if (!buckets_ || e_.parallel.zero_stage == 0 || !shed_optimizer_state_) return;
    auto whole = make_optimizer(e_.optim);
    gather_optimizer_state(
        comm_, *optimizer_, [&](const std::string& p) { return buckets_->owns(p); }, *whole);
    if (voice_) whole_optimizer_ = std::move(whole);
  }

  // Rank 0 writes a checkpoint; the other ranks return at once.
  void write(const std::string& name, bool with_optimizer) {
    if (!voice_) return; // one voice: rank 0 writes the run directory
    state_.elapsed_seconds = elapsed();
    const optim::Optimizer* optimizer = !with_optimizer    ? nullptr
                                        : whole_optimizer_ ? whole_optimizer_.get()
                                                           : optimizer_.get();
    save_checkpoint((fs::path(o_.run_dir) / name).string(), cfg_, params_, optimizer, state_, o_.checkpoint_extra);
    if (with_optimizer) {
      last_save_elapsed_ = state_.elapsed_seconds;
      for (const std::string& gone : pending_removal_) {
        fs::remove(fs::path(o_.run_dir) / gone);
        fs::remove(fs::path(o_.run_dir) / fs::path(gone).replace_extension(".json"));
      }
      pending_removal_.clear();
    }
    log_.write({{"type", "checkpoint"}, {"file", name}, {"update", state_.updates}}, /*durable=*/true);
  }

  const Experiment& e_;
  const TransformerConfig& cfg_;
  ParamStore& params_;
  steps::TrainingTask& task_;
  const TrainOptions& o_;
  dist::Communicator& comm_; // the job's ranks (one, without a launcher)
  bool voice_;               // rank 0: writes the run directory, prints, validates
  RunLog log_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  UpdateBf16Weights bf16_weights_; // CPU bf16: each update's weights rounded once (device_scope.h)
  std::unique_ptr<optim::Schedule> schedule_;
  int64_t batches_per_epoch_ = 0, planned_updates_ = 0;
  ProgressWindow window_;           // the updates since the last progress line
  FirstUpdatesTimer first_updates_; // the early estimate of the run's length
  TrainerState state_;
  TrainerOutcome outcome_;
  std::unique_ptr<dist::DeviceSums> device_sums_;     // a data-parallel job on GPUs: NCCL
  std::unique_ptr<GradientBuckets> buckets_;          // update_freq > 1 or a job: Σ tokens · grad (over the ranks)
  std::unique_ptr<optim::Optimizer> whole_optimizer_; // ZeRO-1, rank 0: the gathered state to save
  bool shed_optimizer_state_ = false;                 // ZeRO-1: the state of others' parameters dropped
  bool save_due_ = false;                             // agreed_limit: save_every_minutes has come
  std::vector<std::string> pending_removal_;          // kept checkpoints that fell out of the best, to delete
  Clock::time_point session_start_;
  double elapsed_at_start_ = 0, last_save_elapsed_ = 0;
  int stop_signal_ = 0; // the stop signal the ranks agreed on (agreed_limit), or 0
};

} // namespace

std::unique_ptr<steps::TrainingTask> make_task(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                               const RunData& data, const StepContext& c) {
  if (data.pairs) return steps::make_seq2seq_task(cfg, params, *data.pairs, e.data.max_tokens, step_recipes(c));
  return steps::make_lm_task(cfg, params, *data.stream, e.data.block_size, e.data.max_tokens, step_recipes(c));
}

TrainerOutcome train_phase(const Experiment& e, const Experiment& limits, const TransformerConfig& cfg,
                           ParamStore& params, const RunData& data, const StepContext& c, TrainOptions to,
                           bool shift_trigger) {
  add_method_parameters(c, cfg, params);
  HeadMetricsLog metrics(e, data, static_cast<int32_t>(cfg.pad_id), to.run_dir, to.phase.empty() ? "train" : to.phase);
  attach_metrics(to, metrics, limits, cfg, params, shift_trigger);
  const std::unique_ptr<steps::TrainingTask> task = make_task(e, cfg, params, data, c);
  return train_model(limits, cfg, params, *task, to);
}

TrainerOutcome train_model(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                           steps::TrainingTask& task, const TrainOptions& options) {
  fs::create_directories(options.run_dir);
  ParamsOnDevice on_device(e, params);
  CpuMatmulPrecision cpu_precision(e);
  Loop loop(e, cfg, params, task, options);
  return loop.run();
}

// The experiment's step settings without the `heads` section's methods (train/head_phases.h's
// train_phase adds those).
static steps::StepRecipes plain_recipes(const Experiment& e) {
  StepContext c = step_context(e);
  c.heads = {};
  return step_recipes(c);
}

TrainerOutcome train_seq2seq(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                             const steps::Seq2SeqData& data, const TrainOptions& options) {
  const auto task = steps::make_seq2seq_task(cfg, params, data, e.data.max_tokens, plain_recipes(e));
  return train_model(e, cfg, params, *task, options);
}

TrainerOutcome train_lm(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                        const steps::LmData& data, const TrainOptions& options) {
  const auto task = steps::make_lm_task(cfg, params, data, e.data.block_size, e.data.max_tokens, plain_recipes(e));
  return train_model(e, cfg, params, *task, options);
}

} // namespace pillars::train
