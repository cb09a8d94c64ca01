// `pillars bench step --ranks N`; see bench_data_parallel.h.
#include "tools/bench/bench_data_parallel.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/dist/communicator.h"
#include "engine/optim/adam.h"
#include "models/transformer.h"
#include "steps/steps.h"
#include "train/pass_list.h"
#include "tools/bench/measure.h"
#include "train/gradient_buckets.h"

namespace pillars::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kBatch = 160, kLen = 25; // as pillars bench step: 4,000 target tokens, no padding
constexpr double kBucketMb = 25;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Batch `seed`: random tokens, every sentence kLen long.
steps::Seq2SeqBatch random_batch(int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(vocab - 1));
  steps::Seq2SeqBatch b;
  b.B = kBatch, b.Ts = kLen, b.Tt = kLen;
  for (int64_t i = 0; i < kBatch * kLen; ++i) {
    b.src_tokens.push_back(token(rng));
    b.prev_output_tokens.push_back(token(rng));
    b.target.push_back(token(rng));
  }
  b.src_lengths.assign(static_cast<size_t>(kBatch), static_cast<int32_t>(kLen));
  b.target_tokens = kBatch * kLen;
  return b;
}

// The figures of one configuration: medians over the timed updates.
struct UpdateTimes {
  double update_s = 0; // one whole update
  double wait_s = 0;   // of it, waiting for the sums after the backward
};

// Updates of the `bench` model as the trainer makes them (train/trainer.cpp): this rank's batches
// through the steps, the buckets' sums, Adam on the owned parameters. Returns the medians.
UpdateTimes time_updates(dist::Communicator& comm, const std::vector<steps::Seq2SeqBatch>& batches, bool overlap,
                         int repeats) {
  TransformerConfig cfg = transformer_config("bench");
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  train::StepContext context;
  context.label_smoothing = 0.1f;
  steps::Seq2SeqSteps steps(cfg, params, train::step_recipes(context));
  train::GradientBuckets buckets(comm, params, kBucketMb, 0, overlap);
  steps.set_gradient_observer(&buckets);
  optim::Adam adam;
  std::vector<double> update_s, wait_s;
  for (int r = 0; r <= repeats; ++r) { // the first update compiles the step: not timed
    comm.barrier();
    const double waited_before = buckets.wait_seconds();
    const auto t0 = Clock::now();
    for (size_t m = 0; m < batches.size(); ++m) {
      buckets.next_batch(m == 0, m + 1 == batches.size());
      steps.train(batches[m], 1000 + m);
    }
    buckets.finish();
    double tokens = static_cast<double>(batches.size() * kBatch * kLen);
    comm.all_reduce_sum(&tokens, 1);
    buckets.divide(static_cast<float>(tokens));
    std::vector<optim::ParamSlot> owned = buckets.owned();
    adam.step(owned, 5e-4f);
    buckets.share_parameters();
    if (r == 0) continue;
    update_s.push_back(seconds_since(t0));
    wait_s.push_back(buckets.wait_seconds() - waited_before);
  }
  steps.set_gradient_observer(nullptr);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(update_s), median(wait_s)};
}

// One all-reduce of `floats` floats, in one MPI call: the median seconds.
double time_all_reduce(dist::Communicator& comm, int64_t floats, int repeats) {
  std::vector<float> x(static_cast<size_t>(floats), 1.0f);
  return median_seconds(repeats, [&] {
    comm.barrier();
    comm.all_reduce_sum(x.data(), floats);
  });
}

int64_t gradient_floats() {
  TransformerConfig cfg = transformer_config("bench");
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  return params.numel();
}

// Every rank of the job measures; rank 0 prints. Returns rank 0's figures as JSON.
nlohmann::json measure_ranks(dist::Communicator& comm, int threads, int repeats) {
  omp_set_num_threads(threads);
  const int64_t vocab = transformer_config("bench").vocab;
  const std::vector<steps::Seq2SeqBatch> mine = {random_batch(vocab, static_cast<uint32_t>(1 + comm.rank()))};
  const UpdateTimes during = time_updates(comm, mine, true, repeats);
  const UpdateTimes after = time_updates(comm, mine, false, repeats);
  const int64_t floats = gradient_floats();
  const double bytes = static_cast<double>(floats) * sizeof(float);
  const double one_call = time_all_reduce(comm, floats, repeats);
  const int64_t large = int64_t{64} << 20; // 256 MB of floats: MPI's bandwidth for a large message
  const double large_call = time_all_reduce(comm, large, std::max(3, repeats / 2));
  const int n = comm.size();
  const double bus = 2.0 * (n - 1) / n; // bytes each rank sends per byte reduced (ring all-reduce)
  nlohmann::json j = {{"ranks", n},
                      {"threads", threads},
                      {"tokens_per_s", static_cast<double>(n * kBatch * kLen) / during.update_s},
                      {"update_s", during.update_s},
                      {"wait_s", during.wait_s},
                      {"update_after_s", after.update_s},
                      {"wait_after_s", after.wait_s},
                      {"gradient_bytes", bytes},
                      {"bucketed_gb_s", bytes / after.wait_s / 1e9},
                      {"one_call_gb_s", bytes / one_call / 1e9},
                      {"large_gb_s", static_cast<double>(large) * 4 / large_call / 1e9},
                      {"bus_factor", bus}};
  return j;
}

// The baseline: one process with ranks · threads threads accumulating the ranks' batches.
double baseline_tokens_per_s(int ranks, int threads, int repeats) {
  omp_set_num_threads(ranks * threads);
  const int64_t vocab = transformer_config("bench").vocab;
  std::vector<steps::Seq2SeqBatch> all;
  for (int r = 0; r < ranks; ++r) all.push_back(random_batch(vocab, static_cast<uint32_t>(1 + r)));
  const UpdateTimes t = time_updates(dist::single_process(), all, true, repeats);
  return static_cast<double>(ranks * kBatch * kLen) / t.update_s;
}

void print_ranks(const nlohmann::json& j) {
  const double bus = j.at("bus_factor");
  const double hidden_s = j.at("update_after_s").get<double>() - j.at("update_s").get<double>();
  std::printf("  %d ranks x %d thread%s  %8.1f target tokens/s  (%.3f s/update, of it %.1f ms waiting for the sums)\n",
              j.at("ranks").get<int>(), j.at("threads").get<int>(), j.at("threads").get<int>() == 1 ? "" : "s",
              j.at("tokens_per_s").get<double>(), j.at("update_s").get<double>(), 1e3 * j.at("wait_s").get<double>());
  std::printf(
      "  gradient all-reduce (%.1f MB in %.0f MB buckets): %.2f GB/s (bus %.2f GB/s); one MPI_Allreduce of it %.2f "
      "GB/s; "
      "of 256 MB %.2f GB/s (MPI here)\n",
      j.at("gradient_bytes").get<double>() / 1e6, kBucketMb, j.at("bucketed_gb_s").get<double>(),
      bus * j.at("bucketed_gb_s").get<double>(), j.at("one_call_gb_s").get<double>(), j.at("large_gb_s").get<double>());
  std::printf(
      "  overlap: %.3f s/update with the sums after the backward (%.1f ms of sums), %.3f s during it: %.0f%% of the "
      "communication hidden\n",
      j.at("update_after_s").get<double>(), 1e3 * j.at("wait_after_s").get<double>(), j.at("update_s").get<double>(),
      100.0 * hidden_s / std::max(j.at("wait_after_s").get<double>(), 1e-9));
}

// Starts `mpirun -np ranks` on this binary and returns rank 0's JSON line (empty: could not run).
nlohmann::json run_job(int ranks, int threads, int repeats) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = str_cat("mpirun -np ", ranks, " --bind-to none ", self, " bench step --ranks ", ranks,
                                  " --threads ", threads, " --repeats ", repeats, " 2>&1");
  std::printf("  (running: %s)\n", cmd.c_str());
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  const size_t brace = out.rfind("\n{");
  if (status != 0 || brace == std::string::npos) {
    std::printf("  the job failed (exit status %d):\n%s\n", status, out.c_str());
    return {};
  }
  return nlohmann::json::parse(out.substr(brace + 1));
}

} // namespace

int bench_data_parallel(int ranks, int threads, int repeats) {
  if (dist::started_by_launcher()) { // a rank of the job
    dist::Communicator& world = dist::world();
    const nlohmann::json j = measure_ranks(world, threads, repeats);
    if (world.is_root()) {
      print_ranks(j);
      std::printf("\n%s\n", j.dump().c_str()); // for the command that started the job
    }
    return 0;
  }
  if (ranks < 2) throw InputError(str_cat("bench step --ranks ", ranks, ": at least 2"));
  std::printf(
      "data-parallel training step: encoder-decoder 3+3, d 256, 8 heads, FFN 1024, vocab 10000, %lld target tokens "
      "per batch and rank, Adam, %.0f MB buckets\n",
      static_cast<long long>(kBatch * kLen), kBucketMb);
  const double one = baseline_tokens_per_s(ranks, threads, repeats);
  std::printf("  1 process x %d threads  %8.1f target tokens/s  (%d batches accumulated per update)\n", ranks * threads,
              one, ranks);
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    std::printf("  %d ranks: skipped (no mpirun: apt-get install openmpi-bin libopenmpi-dev)\n", ranks);
    return 0;
  }
  const nlohmann::json j = run_job(ranks, threads, repeats);
  if (j.empty()) return 1;
  print_ranks(j);
  std::printf("  %d ranks x %d thread%s = %.2fx one process x %d threads (target >= 0.9x)\n", ranks, threads,
              threads == 1 ? "" : "s", j.at("tokens_per_s").get<double>() / one, ranks * threads);
  return 0;
}

} // namespace pillars::bench
