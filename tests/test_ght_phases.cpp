// A whole GHT run on real data (Multi30k from $PILLARS_DATA, a small model on a sliver of it):
// group-constrained training → Voting-to-Stay → heads removed → fine-tuning, as one
// run_experiment, and the same prune step standalone (`pillars prune --from`).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "datasets/registry.h"
#include "ght/voting.h"
#include "train/checkpoint.h"
#include "train/prepare.h"
#include "train/session.h"
#include "train/setup.h"
#include "steps/task.h"
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
      {"data", {{"dataset", "multi30k-de-en"}, {"source", "de"}, {"target", "en"}, {"bpe_merges", 1000},
                {"max_tokens", 1024}, {"train_fraction", 0.05}}},
      {"model", {{"config", "small"}, {"d_model", 64}, {"heads", 4}, {"ffn", 128}, {"enc_layers", 2}, {"dec_layers", 2}}},
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


} // namespace

TEST_CASE("ght phases: GCT training, V2S and fine-tuning make a GHT and a smaller GHT-PS run, and prune --from agrees") {
  if (!testing::have_dataset("multi30k-de-en")) {
    MESSAGE("skipped: PILLARS_DATA does not hold multi30k-de-en");
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
    MESSAGE("skipped: PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_ght_", /*own_cache=*/true);
  const Experiment e = ght_experiment();
  PreparedSeq2Seq p = prepare_seq2seq(e, (tmp.path / "run").string(), false);
  const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
  ParamStore params;
  init_transformer_params(cfg, params, 9);
  auto make_task = [&](std::shared_ptr<GraphExtension> ext) {
    return make_seq2seq_task(cfg, params, 0.0f, p.data, e.data.max_tokens, std::move(ext));
  };
  ght::VoteSettings s;
  s.groups = 2, s.max_batches = 4, s.seed = 11;
  for (ght::KeepRule rule : {ght::KeepRule::per_group, ght::KeepRule::top_c, ght::KeepRule::score, ght::KeepRule::random,
                             ght::KeepRule::random_member}) {
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
