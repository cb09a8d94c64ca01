// `pillars bench step`: one training step (forward, backward, Adam) of the reference
// encoder-decoder, ours and PyTorch's, on the same thread count.
//
// Shape: B = 160 sentence pairs of 25 source and 25 target tokens = 4,000 target tokens, no
// padding; config "bench" (3+3 layers, d 256, 8 heads, FFN 1024, vocab 10,000, dropout 0.1,
// label smoothing 0.1); Adam (0.9, 0.98), lr 5e-4. PyTorch runs tools/bench/torch_step.py (the
// same model written with torch.nn) in a child process; each side reports its own peak RSS.
// Ours runs four times in the same process, through the step's pass list (train/pass_list.h): as
// trained by default; with the activations the backward reads kept in bf16
// (train.saved_activations, engine/passes/saved_activations.h); with the LM head fused with its
// loss (train.fuse_linear_cross_entropy, engine/passes/fuse_linear_cross_entropy.h); with both.
// The gain of the last three is the activation arena (the peak RSS, a process-wide maximum, is
// the first run's). With --precision bf16 it runs our step twice instead, at the CPU's matmul
// precision fp32 and bf16 (kernels/cpu/gemm_precision.h), without PyTorch.
#include "tools/bench/bench_step.h"

#include <omp.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/build_info.h"
#include "engine/executor.h"
#include "engine/optim/adam.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_precision.h"
#include "models/transformer.h"
#include "train/device_scope.h"
#include "train/pass_list.h"
#include "tools/bench/measure.h"

#ifndef PILLARS_SOURCE_DIR
#define PILLARS_SOURCE_DIR "."
#endif

namespace pillars::bench {

namespace {

constexpr int64_t kBatch = 160, kSrcLen = 25, kTgtLen = 25;

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0; // Linux reports KiB
}

struct StepResult {
  double median_s = 0, tokens_per_s = 0, peak_rss_mb = 0, arena_mb = 0;
  float first_loss = 0;
};

// Our training step, set up once (the graph through the step's pass list, its executor, Adam)
// and then run as often as asked: each call is one step, at this step's matmul precision.
class OursStep {
 public:
  // passes: the optional passes the step runs (steps/pass.h). precision: the CPU's matmul
  // precision during the step. weights_once (bf16): each step's weights rounded to bf16 once,
  // before its forward, as the trainer does each update (train/device_scope.h).
  OursStep(const steps::PassSettings& passes, Precision precision = Precision::fp32, bool weights_once = false)
      : cfg_(transformer_config("bench")),
        precision_(precision),
        adam_(0.9, 0.98, 1e-8, 0.0, false),
        bf16_weights_(weights_once && precision == Precision::bf16) {
    init_transformer_params(cfg_, params_, 1);
    m_ = steps::StepGraph::of(build_seq2seq_training_graph(cfg_, kBatch, kSrcLen, kTgtLen, 0.1f, 1234, true),
                              /*train=*/true, Device::cpu);
    steps::run_passes(train::step_passes(train::StepContext{.train = true, .passes = passes}), m_);
    ex_ = std::make_unique<Executor>(m_.graph, Device::cpu, nullptr, m_.memory);
    ex_->bind_params(params_);
    ex_->bind("src_tokens", random_token_ids({kBatch, kSrcLen}, cfg_.vocab, 1));
    Tensor src_lengths = Tensor::empty({kBatch}, DType::i32);
    src_lengths.fill(static_cast<float>(kSrcLen));
    ex_->bind("src_lengths", src_lengths);
    ex_->bind("prev_output_tokens", random_token_ids({kBatch, kTgtLen}, cfg_.vocab, 2));
    ex_->bind("target", random_token_ids({kBatch * kTgtLen}, cfg_.vocab, 3));
    for (size_t i = 0; i < m_.params.size(); ++i) {
      const std::string& name = m_.graph.producer(m_.params[i]).name;
      if (m_.grads[i] != kNoValue) slots_.push_back({name, params_.get(name), ex_->value(m_.grads[i])});
    }
  }

  void operator()() {
    cpu::ScopedMatmulPrecision precision(precision_);
    {
      std::optional<cpu::ScopedBf16Weights> rounded = bf16_weights_.install(params_); // ends before Adam writes
      ex_->run();
    }
    adam_.step(slots_, 5e-4f);
  }
  float loss() const { return ex_->value(m_.loss).data<float>()[0]; }
  // The activation arena plus the largest scratch.
  double arena_mb() const {
    return static_cast<double>(ex_->plan().arena_bytes + ex_->plan().workspace_bytes) / (1 << 20);
  }

 private:
  TransformerConfig cfg_;
  Precision precision_;
  ParamStore params_;
  steps::StepGraph m_;
  std::unique_ptr<Executor> ex_; // reads m_.graph: declared after it
  optim::Adam adam_;
  std::vector<optim::ParamSlot> slots_;
  train::UpdateBf16Weights bf16_weights_;
};

StepResult run_ours(int repeats, const steps::PassSettings& passes) {
  OursStep step(passes);
  StepResult r;
  step(); // the first step's loss (median_seconds warms up with one more)
  r.first_loss = step.loss();
  r.median_s = median_seconds(repeats, std::ref(step));
  r.tokens_per_s = static_cast<double>(kBatch * kTgtLen) / r.median_s;
  r.peak_rss_mb = peak_rss_mb();
  r.arena_mb = step.arena_mb();
  return r;
}

// Runs the PyTorch twin (bf16: under torch.autocast to bf16); returns false (with a printed reason)
// if python3/torch are missing.
bool run_torch(int threads, int repeats, StepResult& r, bool bf16 = false) {
  const std::filesystem::path script = std::filesystem::path(PILLARS_SOURCE_DIR) / "tools/bench/torch_step.py";
  if (!std::filesystem::exists(script)) {
    std::printf("PyTorch: skipped (%s not found)\n", script.c_str());
    return false;
  }
  const std::string cmd = "/usr/bin/python3 " + script.string() + " --threads " + std::to_string(threads) +
                          " --repeats " + std::to_string(repeats) + " --batch " + std::to_string(kBatch) +
                          " --src-len " + std::to_string(kSrcLen) + " --tgt-len " + std::to_string(kTgtLen) +
                          (bf16 ? " --bf16" : "") + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return false;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0 || out.empty()) {
    std::printf("PyTorch: skipped (python3 with torch not available: apt-get install python3-torch)\n");
    return false;
  }
  const auto j = nlohmann::json::parse(out.substr(out.rfind('{')));
  r.median_s = j.at("median_s");
  r.tokens_per_s = j.at("tokens_per_s");
  r.peak_rss_mb = j.at("peak_rss_mb");
  r.first_loss = j.at("first_loss");
  return true;
}

} // namespace

int bench_step(int threads, int repeats) {
  omp_set_num_threads(threads);
  std::printf(
      "training step: encoder-decoder 3+3, d 256, 8 heads, FFN 1024, vocab 10000, %lld target tokens, Adam, %d "
      "threads\n",
      static_cast<long long>(kBatch * kTgtLen), threads);
  const StepResult ours = run_ours(repeats, {});
  std::printf(
      "  pillars  %8.1f target tokens/s  (%.3f s/step, peak RSS %.0f MB, activation arena + scratch %.0f MB, loss "
      "%.3f)\n",
      ours.tokens_per_s, ours.median_s, ours.peak_rss_mb, ours.arena_mb, ours.first_loss);
  // Then the variants, so the peak RSS above is the default step's alone (the process's peak only grows).
  const std::pair<const char*, steps::PassSettings> variants[] = {
      {"activations saved in bf16", {.bf16_saved_activations = true}},
      {"LM head fused with its loss", {.fuse_cross_entropy = true}},
      {"both", {.fuse_cross_entropy = true, .bf16_saved_activations = true}}};
  for (const auto& [what, passes] : variants) {
    const StepResult v = run_ours(repeats, passes);
    std::printf(
        "  pillars, %-28s %8.1f target tokens/s = %.2fx  (%.3f s/step, arena + scratch %.0f MB = %.2fx, loss %.3f)\n",
        what, v.tokens_per_s, v.tokens_per_s / ours.tokens_per_s, v.median_s, v.arena_mb, v.arena_mb / ours.arena_mb,
        v.first_loss);
  }
  StepResult torch;
  if (run_torch(threads, repeats, torch)) {
    std::printf("  pytorch  %8.1f target tokens/s  (%.3f s/step, peak RSS %.0f MB, loss %.3f)\n", torch.tokens_per_s,
                torch.median_s, torch.peak_rss_mb, torch.first_loss);
    std::printf("  speed %.2fx PyTorch (target >= 1.5x), peak memory %.2fx PyTorch's (target <= 0.5x)\n",
                ours.tokens_per_s / torch.tokens_per_s, ours.peak_rss_mb / torch.peak_rss_mb);
  }
  return 0;
}

int bench_step_bf16(int threads, int repeats) {
  omp_set_num_threads(threads);
  std::printf("training step: encoder-decoder 3+3, d 256, 8 heads, FFN 1024, vocab 10000, %lld target tokens, Adam\n",
              static_cast<long long>(kBatch * kTgtLen));
  std::printf("CPU %s, ISA %s, bf16 GEMM path %s, %d thread(s), median of %d steps\n", cpu_model_name().c_str(),
              cpu::isa_name(cpu::active_isa()), cpu::gemm_bf16_path(), threads, repeats);
  std::printf(
      "bf16: the matmul products (linear layers, LM head, their gradients) and the fused attention kernels' "
      "products on operands rounded to bf16, fp32 accumulation; softmax, normalization, loss and Adam in fp32\n");
  // The three steps take turns, one step each per round, so that a machine whose speed drifts
  // (other load, clocks) slows all three alike and the ratios hold.
  OursStep fp32_step({}), per_product_step({}, Precision::bf16), bf16_step({}, Precision::bf16, /*weights_once=*/true);
  std::vector<std::function<void()>> steps = {std::ref(fp32_step), std::ref(per_product_step), std::ref(bf16_step)};
  for (auto& step : steps) step(); // the first steps' losses (interleaved_medians warms up with one more)
  const float losses[] = {fp32_step.loss(), per_product_step.loss(), bf16_step.loss()};
  const std::vector<double> medians = interleaved_medians(repeats, steps);
  StepResult fp32, per_product, bf16;
  StepResult* results[] = {&fp32, &per_product, &bf16};
  for (size_t i = 0; i < 3; ++i) {
    results[i]->median_s = medians[i];
    results[i]->tokens_per_s = static_cast<double>(kBatch * kTgtLen) / medians[i];
    results[i]->first_loss = losses[i];
  }
  std::printf("  pillars fp32  %8.1f target tokens/s  (%.3f s/step, loss %.4f)\n", fp32.tokens_per_s, fp32.median_s,
              fp32.first_loss);
  std::printf(
      "  pillars bf16, each product rounding its weight  %8.1f target tokens/s = %.2fx  (%.3f s/step, loss %.4f)\n",
      per_product.tokens_per_s, per_product.tokens_per_s / fp32.tokens_per_s, per_product.median_s,
      per_product.first_loss);
  std::printf(
      "  pillars bf16, weights rounded once per update (as trained)  %8.1f target tokens/s = %.2fx  (%.3f "
      "s/step, loss %.4f)\n",
      bf16.tokens_per_s, bf16.tokens_per_s / fp32.tokens_per_s, bf16.median_s, bf16.first_loss);
  StepResult torch;
  if (run_torch(threads, repeats, torch, /*bf16=*/true)) {
    std::printf("  pytorch bf16 autocast  %8.1f target tokens/s  (%.3f s/step, loss %.4f)\n", torch.tokens_per_s,
                torch.median_s, torch.first_loss);
    std::printf("  pillars bf16 = %.2fx PyTorch bf16 autocast (target with AMX >= 1.5x)\n",
                bf16.tokens_per_s / torch.tokens_per_s);
  }
  std::printf("  targets for the bf16 / fp32 ratio above: with AMX >= 2x, with AVX512-BF16 only >= 1.3x\n");
  return 0;
}

} // namespace pillars::bench
