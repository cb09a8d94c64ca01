// The training loop on real data (Multi30k from $PILLARS_DATA): it learns, it is deterministic,
// and --resume continues the uninterrupted run exactly.
#include <doctest/doctest.h>

#include "skip.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "datasets/registry.h"
#include "train/checkpoint.h"
#include "train/prepare.h"
#include "train/session.h"
#include "train/setup.h"
#include "train/trainer.h"
#include "steps/task.h"
#include "tests/test_env.h"
#include "tests/test_small_run.h"

using namespace pillars;
using namespace pillars::train;
namespace fs = std::filesystem;

namespace {

// A small model on a fifth of Multi30k: a few milliseconds per update.
Experiment small_experiment(int64_t max_updates) {
  nlohmann::json j = testing::small_multi30k_json(3);
  j["train"] = {{"max_updates", max_updates}, {"valid_bleu", false}, {"log_every", 1000}, {"keep_best", 1}};
  return parse_experiment(j, "test_training.json");
}

// Trains small_experiment(max_updates) quietly into `dir` through run_experiment (no final
// evaluation); returns the options, ready for a --resume.
SessionOptions train_run_in(const fs::path& dir, int64_t max_updates) {
  SessionOptions o;
  o.run_dir = dir.string(), o.quiet = true, o.evaluate = false;
  run_experiment(small_experiment(max_updates), o);
  return o;
}

struct Run {
  TrainerOutcome outcome;
  ParamStore params;
};

Run train_for(const Experiment& e, const std::string& dir, bool resume) {
  PreparedSeq2Seq p = prepare_seq2seq(e, dir, false);
  const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
  Run r;
  init_transformer_params(cfg, r.params, static_cast<uint64_t>(e.seed));
  TrainOptions o;
  o.run_dir = dir, o.resume = resume, o.quiet = true;
  r.outcome = train_seq2seq(e, cfg, r.params, p.data, o);
  return r;
}

} // namespace

TEST_CASE("training: two hundred updates on Multi30k lower the validation loss by more than 2.5 nats") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: a test of learning (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  const Run first = train_for(small_experiment(1), (tmp.path / "a").string(), false);
  const Run trained = train_for(small_experiment(200), (tmp.path / "b").string(), false);
  REQUIRE(first.outcome.last_valid);
  REQUIRE(trained.outcome.last_valid);
  MESSAGE("validation loss after 1 update: ", first.outcome.last_valid->loss,
          ", after 200: ", trained.outcome.last_valid->loss);
  CHECK(trained.outcome.last_valid->loss < first.outcome.last_valid->loss - 2.5);
}

TEST_CASE("training: the same experiment gives identical losses, and resume continues the run exactly") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  // More updates than one epoch holds (a fifth of Multi30k at 1024 tokens is ~90 batches), so the
  // interrupted run also crosses an epoch boundary with its reshuffle and validation.
  const int64_t total = 120, cut = 50;
  const Run a = train_for(small_experiment(total), (tmp.path / "a").string(), false);
  const Run b = train_for(small_experiment(total), (tmp.path / "b").string(), false);
  REQUIRE(a.outcome.losses.size() == static_cast<size_t>(total));
  CHECK(a.outcome.losses == b.outcome.losses);

  const Run first_half = train_for(small_experiment(cut), (tmp.path / "c").string(), false);
  const Run second_half = train_for(small_experiment(total), (tmp.path / "c").string(), true);
  std::vector<float> joined = first_half.outcome.losses;
  joined.insert(joined.end(), second_half.outcome.losses.begin(), second_half.outcome.losses.end());
  CHECK(joined == a.outcome.losses);
  for (const std::string& name : a.params.names()) {
    const Tensor& x = a.params.get(name);
    const Tensor& y = second_half.params.get(name);
    CHECK_MESSAGE(std::equal(x.data<float>(), x.data<float>() + x.numel(), y.data<float>()), name);
  }
}

TEST_CASE("training: --resume refuses a directory without a run") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  CHECK_THROWS_AS(train_for(small_experiment(5), (tmp.path / "empty").string(), true), InputError);
}

TEST_CASE(
    "training: a small language model learns Penn Treebank: one hundred updates lower the validation loss by 2 nats") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: a test of learning (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!std::getenv("PILLARS_DATA")) {
    SKIP_TEST("PILLARS_DATA is not set");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  auto run = [&](int64_t updates, const std::string& dir) {
    nlohmann::json j = {{"task", "language_modeling"},
                        {"data",
                         {{"dataset", "ptb"},
                          {"tokenizer", "none"},
                          {"bpe_merges", 0},
                          {"block_size", 64},
                          {"max_tokens", 2048},
                          {"train_fraction", 0.2}}},
                        {"model", {{"config", "lm-small"}, {"d_model", 64}, {"ffn", 128}, {"layers", 2}}},
                        {"optim", {{"lr", 3e-3}, {"warmup_updates", 20}}},
                        {"train",
                         {{"max_updates", updates},
                          {"label_smoothing", 0.0},
                          {"best_metric", "ppl"},
                          {"valid_bleu", false},
                          {"log_every", 1000},
                          {"keep_best", 1}}}};
    const Experiment e = parse_experiment(j, "test_lm.json");
    PreparedLm p = prepare_lm(e, dir, false);
    const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
    ParamStore params;
    init_transformer_params(cfg, params, 1);
    TrainOptions o;
    o.run_dir = dir, o.quiet = true;
    return train_lm(e, cfg, params, p.data, o);
  };
  const TrainerOutcome first = run(1, (tmp.path / "a").string());
  const TrainerOutcome trained = run(100, (tmp.path / "b").string());
  REQUIRE(first.last_valid);
  REQUIRE(trained.last_valid);
  MESSAGE("PTB validation loss after 1 update: ", first.last_valid->loss, ", after 100: ", trained.last_valid->loss,
          " (perplexity ", trained.last_valid->ppl, ")");
  CHECK(trained.last_valid->loss < first.last_valid->loss - 2.0);
}

TEST_CASE("training: a diverging run stops with an error naming the update, and keeps its last good checkpoint") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  Experiment e = small_experiment(200);
  e.optim.lr = 1e4; // no warm-up, no clipping: the parameters blow up within a few updates
  e.optim.warmup_updates = 0;
  std::string message;
  try {
    train_for(e, (tmp.path / "nan").string(), false);
  } catch (const Error& err) {
    message = err.what();
  }
  CHECK(message.find("training loss is") != std::string::npos);
  CHECK(message.find("checkpoint_last") != std::string::npos);
}

TEST_CASE("checkpoints: averaging gives the element-wise mean, and a checkpoint round-trips") {
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore a, b;
  init_transformer_params(cfg, a, 1);
  init_transformer_params(cfg, b, 2);
  TrainerState st;
  st.epoch = 3, st.updates = 42, st.kept["checkpoint_e3_u42.safetensors"] = 1.5;
  const std::string pa = (tmp.path / "a.safetensors").string(), pb = (tmp.path / "b.safetensors").string();
  save_checkpoint(pa, cfg, a, nullptr, st);
  save_checkpoint(pb, cfg, b, nullptr, st);
  CHECK(fs::exists(tmp.path / "a.json"));
  const LoadedCheckpoint back = load_checkpoint(pa);
  CHECK(back.state.updates == 42);
  CHECK(back.state.kept.at("checkpoint_e3_u42.safetensors") == 1.5);
  CHECK(back.config.d_model == cfg.d_model);
  TransformerConfig avg_cfg;
  const ParamStore avg = average_checkpoints({pa, pb}, &avg_cfg);
  for (const std::string& name : a.names()) {
    const float* x = a.get(name).data<float>();
    const float* y = b.get(name).data<float>();
    const float* m = avg.get(name).data<float>();
    for (int64_t i = 0; i < a.get(name).numel(); ++i)
      REQUIRE(m[i] == static_cast<float>((static_cast<double>(x[i]) + static_cast<double>(y[i])) / 2.0));
  }
}

TEST_CASE(
    "training: resume refuses a changed experiment, and a finished run resumed with the same limits does nothing") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  SessionOptions o = train_run_in(tmp.path / "run", 5);
  o.resume = true;
  Experiment changed = small_experiment(5);
  changed.optim.lr = 1e-3;
  try {
    run_experiment(changed, o);
    FAIL("a changed learning rate was resumed");
  } catch (const InputError& err) {
    CHECK(std::string(err.what()).find("optim/lr") != std::string::npos);
  }
  // The same experiment: it already reached max_updates = 5, so nothing is trained.
  const auto before = load_checkpoint(o.run_dir + "/checkpoint_last.safetensors");
  run_experiment(small_experiment(5), o);
  const auto after = load_checkpoint(o.run_dir + "/checkpoint_last.safetensors");
  CHECK(after.state.updates == 5);
  CHECK(after.state.stop_reason == "max_updates");
  const Tensor& w0 = before.params.get("decoder.layers.0.fc1.weight");
  const Tensor& w1 = after.params.get("decoder.layers.0.fc1.weight");
  CHECK(std::equal(w0.data<float>(), w0.data<float>() + w0.numel(), w1.data<float>()));
}

TEST_CASE("training: keep_best keeps exactly the best validated checkpoints, and average_best averages them") {
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  Experiment e = small_experiment(100);
  e.data.train_fraction = 0.05; // ~25 batches an epoch: four validations in 100 updates
  e.train.keep_best = 2, e.train.average_best = 2;
  const std::string dir = (tmp.path / "keep").string();
  const Run r = train_for(e, dir, false);
  CHECK(r.outcome.state.kept.size() == 2);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint_e", 0) == 0 && entry.path().extension() == ".safetensors") files.push_back(name);
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> kept;
  for (const auto& [name, score] : r.outcome.state.kept) kept.push_back(name);
  CHECK(files == kept);
  CHECK(fs::exists(fs::path(dir) / "checkpoint_avg.safetensors"));
}

TEST_CASE(
    "eval: --shuffle-sources pairs each target with another source, a model that reads its input loses, files are kept "
    "apart") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: a test of learning (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_training_", /*own_cache=*/true);
  const SessionOptions o = train_run_in(tmp.path / "run", 300);
  EvalOptions eo;
  eo.split = "val", eo.checkpoint = "last", eo.beam = 1, eo.quiet = true;
  const nlohmann::json real = evaluate_run(o.run_dir, eo);
  eo.shuffle_sources = true;
  const nlohmann::json shuffled = evaluate_run(o.run_dir, eo);
  MESSAGE("validation loss with the real sources ", real.at("loss").get<double>(), ", with shuffled ones ",
          shuffled.at("loss").get<double>());
  // Translation depends on the source, and after 300 updates this model already uses it (measured:
  // 4.63 with the real sources, 5.01 with shuffled ones); a rotation that did nothing would give
  // equal losses.
  CHECK(shuffled.at("loss").get<double>() > real.at("loss").get<double>() + 0.2);
  CHECK(shuffled.at("shuffled_sources").get<bool>());
  CHECK(shuffled.at("bleu").get<double>() < real.at("bleu").get<double>());
  CHECK(fs::exists(fs::path(o.run_dir) / "eval_val.json"));
  CHECK(fs::exists(fs::path(o.run_dir) / "eval_val_shuffled.json"));
  std::ifstream unshuffled(fs::path(o.run_dir) / "eval_val.json");
  CHECK(nlohmann::json::parse(unshuffled).count("shuffled_sources") == 0);
}

TEST_CASE("eval: a language model's per-block losses cover every block and sum to the batched loss") {
  if (!std::getenv("PILLARS_DATA")) {
    SKIP_TEST("PILLARS_DATA is not set");
    return;
  }
  testing::ScratchDir tmp("pillars_block_nll_", /*own_cache=*/true);
  nlohmann::json j = {{"task", "language_modeling"},
                      {"data",
                       {{"dataset", "ptb"},
                        {"tokenizer", "none"},
                        {"bpe_merges", 0},
                        {"block_size", 64},
                        {"max_tokens", 2048},
                        {"train_fraction", 0.05}}},
                      {"model", {{"config", "lm-small"}, {"d_model", 32}, {"ffn", 64}, {"layers", 1}, {"heads", 2}}},
                      {"train", {{"max_updates", 1}}}};
  const Experiment e = parse_experiment(j, "test_block_nll.json");
  PreparedLm p = prepare_lm(e, (tmp.path / "run").string(), false);
  const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  steps::LmSteps steps(cfg, params, step_recipes({})); // the plain evaluation step
  const int64_t T = 64;
  const int32_t pad = static_cast<int32_t>(cfg.pad_id);
  const std::vector<int32_t>& stream = p.data.valid;
  const auto rows = steps::lm_block_nll(steps, stream, T, pad);
  const int64_t blocks = steps::lm_blocks(stream, T);
  REQUIRE(static_cast<int64_t>(rows.size()) == blocks);
  double nll = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    // Every block predicts T tokens but the last, which predicts what is left of the stream.
    const int64_t expected = i + 1 < rows.size() ? T : static_cast<int64_t>(stream.size()) - 1 - T * (blocks - 1);
    CHECK(rows[i].second == expected);
    CHECK(rows[i].first > 0);
    nll += rows[i].first, tokens += rows[i].second;
  }
  const auto [batched_nll, batched_tokens] = steps::lm_nll(steps, stream, T, 2048, pad);
  CHECK(tokens == batched_tokens);
  CHECK(nll == doctest::Approx(batched_nll).epsilon(1e-5)); // another batch shape: fp32 rounding only
}
