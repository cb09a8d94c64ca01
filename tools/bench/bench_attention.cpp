// The attention benchmark: fused (online softmax, O(T) memory) against naive (materialized
// (B, H, T, T) scores and probabilities, sgemm for the two products, a plain softmax), in one run,
// on the same operands.
//
// FLOP counts (the useful work, the same for both sides): the forward pass is two products of
// 2·T·T·D flops per (batch, head), i.e. 4·B·H·Tq·Tk·D; the backward pass is five (P recomputed,
// dV, dP, dQ, dK), so forward+backward is 3.5× the forward (the FlashAttention convention). With the
// causal mask half of the matrix is needed, so the counts are halved — the naive side still
// computes the whole matrix, which is part of what fusion buys.
//
// Memory: "extra" is what each side allocates beyond its inputs, outputs and lse: the fused
// kernels' per-thread scratch × threads, and the naive side's (B, H, Tq, Tk) matrices (P in the
// forward; P and dP in the backward, which frees the forward's first, so fwd+bwd reports the larger).
//
// Each timing is the median of `repeats` runs after one warm-up run. "max rel diff" compares the
// fused outputs (O, and dQ, dK, dV) with the naive ones: a sanity check that both computed the same.
#include "tools/bench/bench_attention.h"
#include "tools/bench/measure.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"

namespace pillars::bench {
namespace {

// One implementation's buffers: outputs of the forward and the backward.
struct Outputs {
  std::vector<float> O, lse, dQ, dK, dV;
  explicit Outputs(int64_t elements, int64_t rows) : O(elements), lse(rows), dQ(elements), dK(elements), dV(elements) {}
};

struct Implementation {
  const char* name;
  decltype(&cpu::attention_forward) forward;
  decltype(&cpu::attention_backward) backward;
};

struct Timing {
  double forward_s, training_s; // forward; forward + backward
};

Timing time_implementation(const cpu::AttentionParams& p, const Implementation& impl, const std::vector<float>& Q,
                           const std::vector<float>& K, const std::vector<float>& V, const std::vector<float>& dO,
                           Outputs& out, int repeats) {
  auto forward = [&] { impl.forward(p, Q.data(), K.data(), V.data(), out.O.data(), out.lse.data(), nullptr); };
  auto training = [&] {
    forward();
    impl.backward(p, Q.data(), K.data(), V.data(), out.O.data(), out.lse.data(), dO.data(), out.dQ.data(),
                  out.dK.data(), out.dV.data());
  };
  return {median_seconds(repeats, forward), median_seconds(repeats, training)};
}

void bench_case(int64_t B, int64_t H, int64_t T, int64_t D, bool causal, int threads, int repeats, std::mt19937& rng) {
  cpu::AttentionParams p = cpu::attention_params_contiguous(B, H, T, T, D);
  p.causal = causal;
  const int64_t elements = B * T * H * D;
  const std::vector<float> Q = random_floats(elements, rng), K = random_floats(elements, rng),
                           V = random_floats(elements, rng), dO = random_floats(elements, rng);
  Outputs fused(elements, B * H * T), naive(elements, B * H * T);
  const Timing f =
      time_implementation(p, {"fused", cpu::attention_forward, cpu::attention_backward}, Q, K, V, dO, fused, repeats);
  const Timing n = time_implementation(
      p, {"naive", cpu::attention_forward_reference, cpu::attention_backward_reference}, Q, K, V, dO, naive, repeats);

  const double forward_gflop = 4.0 * double(B * H) * double(T) * double(T) * double(D) * (causal ? 0.5 : 1.0) * 1e-9;
  const double training_gflop = 3.5 * forward_gflop;
  const double MiB = 1.0 / (1024.0 * 1024.0);
  const double fused_fwd_mem = double(threads) * cpu::attention_scratch_bytes_per_thread(p, false) * MiB;
  const double fused_train_mem =
      double(threads) *
      std::max(cpu::attention_scratch_bytes_per_thread(p, false), cpu::attention_scratch_bytes_per_thread(p, true)) *
      MiB;
  const double naive_fwd_mem = cpu::attention_reference_scratch_bytes(p, false) * MiB;
  const double naive_train_mem =
      std::max(cpu::attention_reference_scratch_bytes(p, false), cpu::attention_reference_scratch_bytes(p, true)) * MiB;
  const double diff = std::max({max_rel_diff(fused.O, naive.O), max_rel_diff(fused.dQ, naive.dQ),
                                max_rel_diff(fused.dK, naive.dK), max_rel_diff(fused.dV, naive.dV)});

  auto row = [&](const char* pass, double fs, double ns, double gflop, double fmem, double nmem) {
    std::printf("%-7s %-8s %9.2f %8.1f %9.2f %8.1f %7.2fx %10.2f %10.1f\n", causal ? "causal" : "none", pass, fs * 1e3,
                gflop / fs, ns * 1e3, gflop / ns, ns / fs, fmem, nmem);
  };
  row("fwd", f.forward_s, n.forward_s, forward_gflop, fused_fwd_mem, naive_fwd_mem);
  row("fwd+bwd", f.training_s, n.training_s, training_gflop, fused_train_mem, naive_train_mem);
  std::printf("%-7s max rel diff fused vs naive (O, dQ, dK, dV): %.1e\n", "", diff);
}

} // namespace

int bench_attention(int threads, int repeats) {
  threads = std::max(1, threads);
  repeats = std::max(1, repeats);
  omp_set_num_threads(threads);
  const int64_t B = 8, H = 8, T = 512, D = 64;
  std::printf("attention: B%lld H%lld T%lld D%lld, fused tiles %s, %d thread(s), median of %d runs\n",
              static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(T),
              static_cast<long long>(D), cpu::attention_isa(), threads, repeats);
  std::printf("%-7s %-8s %9s %8s %9s %8s %8s %10s %10s\n", "mask", "pass", "fused ms", "GFLOP/s", "naive ms", "GFLOP/s",
              "speedup", "fused MiB", "naive MiB");
  std::mt19937 rng(42);
  for (bool causal : {false, true}) bench_case(B, H, T, D, causal, threads, repeats, rng);
  return 0;
}

} // namespace pillars::bench
