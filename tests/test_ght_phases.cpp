// A whole GHT run on real data (Multi30k from $PILLARS_DATA, a small model on a sliver of it):
// group-constrained training → Voting-to-Stay → heads removed → fine-tuning, as one
// run_experiment, and the same prune step standalone (`pillars prune --from`).
#include <doctest/doctest.h>

#include "skip.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "datasets/registry.h"
#include "ght/prune.h"
#include "ght/voting.h"
#include "train/checkpoint.h"
#include "train/prepare.h"
#include "train/session.h"
#include "train/setup.h"
#include "steps/task.h"
#include "train/head_phases.h"
#include "tests/test_env.h"

using namespace pillars;
using namespace pillars::train;
namespace fs = std::filesystem;

namespace {

// d 64, 4 heads, 2+2 layers (6 attention modules), 5 % of Multi30k: two epochs of GCT, a vote on
// 6 batches, one epoch of fine-tuning.
Experiment ght_experiment() {
  nlohmann::json j = {
      {"task", "translation"},
      {"seed", 5},
      {"data",
       {{"dataset", "multi30k-de-en"},
        {"source", "de"},
        {"target", "en"},
        {"bpe_merges", 1000},
        {"max_tokens", 1024},
        {"train_fraction", 0.05}}},
      {"model",
       {{"config", "small"}, {"d_model", 64}, {"heads", 4}, {"ffn", 128}, {"enc_layers", 2}, {"dec_layers", 2}}},
      {"optim", {{"lr", 2e-3}, {"warmup_updates", 20}}},
      {"train", {{"max_epochs", 10}, {"valid_bleu", false}, {"log_every", 1000}, {"keep_best", 1}}},
      {"heads", {{"regularizer", "gct"}, {"groups", 2}, {"alpha", 0.7}, {"beta", 0.5}, {"metrics_sentences", 8}}},
      {"prune", {{"method", "v2s"}, {"epoch", 2}, {"vote_batches", 6}, {"finetune_epochs", 1}}}};
  return parse_experiment(j, "test_ght_phases.json");
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), p.string(), " is missing");
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::ifstream in(p);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The same run budgeted in updates, as the experiment files are: phase 1 is one epoch (58 batches
// of this slice), then fine-tuning under `schedule` until train.max_updates, without early stopping.
Experiment budgeted_experiment(int64_t max_updates, const std::string& schedule = "continue") {
  Experiment e = ght_experiment();
  e.train.max_updates = max_updates;
  e.train.log_every = 1;
  e.heads.metrics = false;
  e.prune.epoch = 1;
  e.prune.finetune_epochs = 50;
  e.prune.finetune_patience = 0;
  e.prune.finetune_schedule = parse_enum<ght::FinetuneSchedule>(schedule, "prune.finetune_schedule");
  return e;
}

SessionOptions quiet_run(const fs::path& dir) {
  SessionOptions so;
  so.run_dir = dir.string();
  so.quiet = true;
  so.evaluate = false;
  return so;
}

// The training lines of a log: update → (loss, lr).
std::map<int64_t, std::pair<double, float>> train_lines(const fs::path& log) {
  std::map<int64_t, std::pair<double, float>> out;
  for (const nlohmann::json& l : read_jsonl(log))
    if (l["type"] == "train") out[l["update"].get<int64_t>()] = {l["loss"].get<double>(), l["lr"].get<float>()};
  return out;
}

bool same_parameters(const LoadedCheckpoint& a, const LoadedCheckpoint& b) {
  if (a.params.names() != b.params.names()) return false;
  for (const std::string& name : a.params.names()) {
    const Tensor& x = a.params.get(name);
    const Tensor& y = b.params.get(name);
    if (x.shape() != y.shape() || !std::equal(x.data<float>(), x.data<float>() + x.numel(), y.data<float>()))
      return false;
  }
  return true;
}

} // namespace

TEST_CASE(
    "ght phases: GCT training, V2S and fine-tuning make a GHT and a smaller GHT-PS run, and prune --from agrees") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_ght_", /*own_cache=*/true);
  const Experiment e = ght_experiment();
  SessionOptions so;
  so.run_dir = (tmp.path / "run").string();
  so.quiet = true;
  so.evaluate = false;
  run_experiment(e, so);
  const fs::path run = so.run_dir;

  // Phase 1: two epochs with GCT, logged as phase "train", head metrics at each validation.
  const std::vector<nlohmann::json> log = read_jsonl(run / "log.jsonl");
  REQUIRE(!log.empty());
  CHECK(log.front()["phase"] == "train");
  CHECK(log.back()["type"] == "end");
  CHECK(log.back()["reason"] == "max_epochs");
  const std::vector<nlohmann::json> metrics = read_jsonl(run / "head_metrics.jsonl");
  REQUIRE(metrics.size() == 2); // one per validation (epochs 1 and 2)
  CHECK(metrics[0]["modules"].size() == 6);
  CHECK(metrics[1]["epoch"] == 2);

  // The vote: 6 batches, every module keeps the most-voted member of each of its 2 groups.
  const nlohmann::json votes = read_json(run / "votes.json");
  CHECK(votes["batches"] == 6);
  CHECK(votes["rule"] == "per_group");
  REQUIRE(votes["modules"].size() == 6);
  for (const auto& m : votes["modules"]) {
    CAPTURE(m.dump());
    int64_t total = 0;
    for (const auto& v : m["votes"]) total += v.get<int64_t>();
    CHECK(total == 6 * 2); // one vote per group per batch
    REQUIRE(m["kept"].size() == 2);
    CHECK(m["groups"][m["kept"][0].get<int>()] != m["groups"][m["kept"][1].get<int>()]); // one per group
  }

  // The prune: the checkpoint is smaller and its config says 2 heads everywhere.
  const nlohmann::json prune = read_json(run / "prune.json");
  CHECK(prune["params_after_no_embeddings"].get<int64_t>() < prune["params_before_no_embeddings"].get<int64_t>());
  LoadedCheckpoint pruned = load_checkpoint((run / "checkpoint_pruned.safetensors").string());
  for (const std::string& module : attention_modules(pruned.config)) CHECK(pruned.config.heads_of(module) == 2);
  // 6 modules × 2 of 4 heads removed × (q, k, v rows + out columns + q, k, v biases) of width 16.
  CHECK(prune["params_before_no_embeddings"].get<int64_t>() - prune["params_after_no_embeddings"].get<int64_t>() ==
        6 * 2 * (4 * 16 * 64 + 3 * 16));

  // Phase 2: a run directory of its own, with the pruned model.
  const std::vector<nlohmann::json> finetune = read_jsonl(run / "pruned" / "log.jsonl");
  REQUIRE(!finetune.empty());
  CHECK(finetune.front()["phase"] == "finetune");
  LoadedCheckpoint last = load_checkpoint((run / "pruned" / "checkpoint_last.safetensors").string());
  CHECK(last.config.module_heads == pruned.config.module_heads);
  CHECK(last.state.updates > 0);
  CHECK(fs::exists(run / "pruned" / "config.json"));
  CHECK(fs::exists(run / "pruned" / "dict.txt"));

  // The same prune step standalone from phase 1's last checkpoint: the same (deterministic) vote.
  SessionOptions standalone = so;
  standalone.run_dir = (tmp.path / "standalone").string();
  standalone.prune_from = (run / "checkpoint_last.safetensors").string();
  Experiment short_finetune = e;
  run_experiment(short_finetune, standalone);
  const nlohmann::json votes2 = read_json(fs::path(standalone.run_dir) / "votes.json");
  CHECK(votes2["modules"] == votes["modules"]);
  CHECK(!fs::exists(fs::path(standalone.run_dir) / "log.jsonl")); // no first phase
  CHECK(fs::exists(fs::path(standalone.run_dir) / "pruned" / "checkpoint_best.safetensors"));
}

TEST_CASE("ght phases: the vote is deterministic for a seed and counts one vote per group per batch") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_ght_", /*own_cache=*/true);
  const Experiment e = ght_experiment();
  PreparedSeq2Seq p = prepare_seq2seq(e, (tmp.path / "run").string(), false);
  const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
  ParamStore params;
  init_transformer_params(cfg, params, 9);
  auto make_task = [&] { return train::make_task(e, cfg, params, RunData{.pairs = &p.data}, vote_context(e)); };
  ght::VoteSettings s;
  s.groups = 2, s.max_batches = 4, s.seed = 11;
  for (ght::KeepRule rule : {ght::KeepRule::per_group, ght::KeepRule::top_c, ght::KeepRule::score,
                             ght::KeepRule::random, ght::KeepRule::random_member}) {
    s.rule = rule;
    CAPTURE(enum_name(rule));
    const ght::VoteResult a = ght::vote(make_task, s, true), b = ght::vote(make_task, s, true);
    CHECK(a.to_json() == b.to_json());
    CHECK(a.batches == 4);
    for (const ght::ModuleVotes& m : a.modules) {
      int64_t total = 0;
      for (int64_t v : m.votes) total += v;
      CHECK(total == 4 * 2);
      CHECK(m.kept.size() == 2);
      CHECK(std::is_sorted(m.kept.begin(), m.kept.end()));
      for (int i = 0; i < m.heads; ++i) CHECK(m.co_assigned[static_cast<size_t>(i * m.heads + i)] == 4);
    }
  }
  s.rule = ght::KeepRule::top_c;
  // top_c keeps the heads with the most votes.
  const ght::VoteResult r = ght::vote(make_task, s, true);
  for (const ght::ModuleVotes& m : r.modules) {
    std::vector<int64_t> sorted = m.votes;
    std::sort(sorted.rbegin(), sorted.rend());
    CHECK(m.votes[static_cast<size_t>(m.kept[0])] + m.votes[static_cast<size_t>(m.kept[1])] == sorted[0] + sorted[1]);
  }
}

TEST_CASE(
    "ght phases: \"continue\" fine-tunes on phase 1's optimizer and schedule up to train.max_updates, and resumes "
    "exactly") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_ght_", /*own_cache=*/true);
  const int64_t total = 80;
  const Experiment e = budgeted_experiment(total);
  const fs::path run = tmp.path / "run";
  run_experiment(e, quiet_run(run));

  // Phase 1: one epoch, the trigger.
  const LoadedCheckpoint phase1 = load_checkpoint((run / "checkpoint_last.safetensors").string());
  const int64_t u1 = phase1.state.updates;
  REQUIRE(u1 > 0);
  REQUIRE(u1 < total);
  CHECK(phase1.state.epoch == 2);

  // checkpoint_pruned carries phase 1's optimizer state, sliced to the kept heads of prune.json.
  ght::HeadSelection keep;
  const nlohmann::json prune = read_json(run / "prune.json");
  for (const auto& m : prune["modules"]) keep[m["module"].get<std::string>()] = m["kept"].get<std::vector<int>>();
  const LoadedCheckpoint pruned = load_checkpoint((run / "checkpoint_pruned.safetensors").string());
  const optim::NamedTensors expected = ght::prune_optimizer_state(phase1.config, phase1.optimizer_state, keep);
  REQUIRE(pruned.optimizer_state.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(expected[i].first);
    CHECK(pruned.optimizer_state[i].first == expected[i].first);
    const Tensor& a = pruned.optimizer_state[i].second;
    const Tensor& b = expected[i].second;
    REQUIRE(a.shape() == b.shape());
    CHECK(std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
  }
  CHECK(pruned.state.updates == u1);

  // Phase 2 counts on from update u1 + 1 at the schedule's learning rate there (no second warm-up),
  // and the run ends at train.max_updates, the budget of a run without pruning.
  const auto lines = train_lines(run / "pruned" / "log.jsonl");
  REQUIRE(!lines.empty());
  CHECK(lines.begin()->first == u1 + 1);
  CHECK(lines.rbegin()->first == total);
  CHECK(static_cast<int64_t>(lines.size()) == total - u1);
  const auto schedule = make_schedule(e.optim, total);
  for (const auto& [u, loss_lr] : lines) {
    CAPTURE(u);
    CHECK(loss_lr.second == schedule->lr(u));
  }
  CHECK(lines.at(u1 + 1).second != lines.at(total).second); // inverse square root: still decaying
  const LoadedCheckpoint last = load_checkpoint((run / "pruned" / "checkpoint_last.safetensors").string());
  CHECK(last.state.updates == total);
  CHECK(last.state.stop_reason == "max_updates");
  CHECK(read_json(run / "pruned" / "config.json")["train"]["max_updates"] == total);

  // Interrupted in phase 2 (a smaller budget), then resumed to the full one: the same losses and the
  // same final parameters, bit for bit.
  const fs::path cut = tmp.path / "cut";
  run_experiment(budgeted_experiment(u1 + 9), quiet_run(cut));
  REQUIRE(load_checkpoint((cut / "pruned" / "checkpoint_last.safetensors").string()).state.updates == u1 + 9);
  SessionOptions resume = quiet_run(cut);
  resume.resume = true;
  run_experiment(e, resume);
  CHECK(train_lines(cut / "pruned" / "log.jsonl") == lines);
  CHECK(same_parameters(load_checkpoint((cut / "pruned" / "checkpoint_last.safetensors").string()), last));

  // `pillars prune --from` phase 1's checkpoint continues from its optimizer state just so.
  SessionOptions from = quiet_run(tmp.path / "from");
  from.prune_from = (run / "checkpoint_last.safetensors").string();
  run_experiment(e, from);
  CHECK(train_lines(tmp.path / "from" / "pruned" / "log.jsonl") == lines);
  CHECK(
      same_parameters(load_checkpoint((tmp.path / "from" / "pruned" / "checkpoint_last.safetensors").string()), last));

  // A checkpoint without optimizer state (checkpoint_best) falls back to "restart", and says so in
  // the fine-tuning's config.
  SessionOptions from_best = quiet_run(tmp.path / "from_best");
  from_best.prune_from = (run / "checkpoint_best.safetensors").string();
  Experiment capped = e;
  capped.prune.finetune_updates = 3;
  run_experiment(capped, from_best);
  CHECK(read_json(tmp.path / "from_best" / "pruned" / "config.json")["prune"]["finetune_schedule"] == "restart");
  CHECK(train_lines(tmp.path / "from_best" / "pruned" / "log.jsonl").begin()->first == 1);
}

TEST_CASE(
    "ght phases: \"restart\" fine-tunes with a fresh optimizer at phase 1's last learning rate, counted from update "
    "1") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: two trainings compared (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_ght_", /*own_cache=*/true);
  Experiment e = budgeted_experiment(80, "restart");
  e.prune.finetune_updates = 10;
  const fs::path run = tmp.path / "run";
  run_experiment(e, quiet_run(run));
  const int64_t u1 = load_checkpoint((run / "checkpoint_last.safetensors").string()).state.updates;
  CHECK(load_checkpoint((run / "checkpoint_pruned.safetensors").string()).optimizer_state.empty());
  const auto lines = train_lines(run / "pruned" / "log.jsonl");
  REQUIRE(lines.size() == 10); // prune.finetune_updates alone: train.max_updates is phase 1's
  CHECK(lines.begin()->first == 1);
  const float lr = make_schedule(e.optim, u1)->lr(u1);
  for (const auto& [u, loss_lr] : lines) CHECK(loss_lr.second == lr);
}
