// Flash attention on the GPU: the plain-pointer API under the attention op (its adapters are
// engine/ops/cuda/attention.cu) and the benchmark (`pillars bench attention --device cuda`). Same
// function as kernels/cpu/attention.h:
//
//   Q (B, Tq, H, D), K and V (B, Tk, H, D), O (B, Tq, H, D), lse (B, H, Tq) — row-major, contiguous
//   S = scale · Q Kᵀ (+ masks),  P = softmax(S) (a fully masked row gives P = 0, lse = −inf),
//   O = dropout(P) V,  lse_i = log Σ_j exp(S_ij)
// Masks: key j is hidden from query i when j ≥ key_lengths[b], or, if causal, when
// j > i + Tk − Tq (diagonal aligned to the bottom-right corner). The slots at or past
// key_lengths[b] are never read (a tile stops at the key limit, the rest staged as zeros), so they
// may hold anything, NaN included: 0 · NaN would be NaN even under P = 0. Keys hidden only by the
// causal mask are read with their tile and multiplied by P = 0: they are real keys, finite.
// Dropout: element (b, h, i, j) of P is kept when
// philox_uniform(seed, rng_offset, ((b·H + h)·Tq + i)·Tk + j) ≥ p (kernels/philox.h), the stream the
// CPU kernels use, so CPU and GPU draw the same masks.
//
// Two precisions (cuda::Precision): fp32 computes every product in fp32 on the CUDA cores (the
// exactness mode); bf16 rounds Q, K, V, P (and dO, dS in the backward) to bf16 for the tensor
// cores and accumulates in fp32. Either precision reads and writes the element type T of the
// pointers (float or __nv_bfloat16); lse is always float.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {

struct AttentionArgs {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, D = 0; // D ∈ {32, 64, 128} on the tensor-core path
  float scale = 1.0f;
  bool causal = false;
  const int32_t* key_lengths = nullptr; // device (B) or nullptr
  float dropout_p = 0.0f;
  // The dropout stream's seed is seed + *run_seed: run_seed points at device memory (the
  // executor's per-step seed, so that a captured CUDA graph draws fresh masks); nullptr means 0.
  uint64_t seed = 0, rng_offset = 0;
  const uint64_t* run_seed = nullptr;
  Precision precision = Precision::bf16;
};

// probs (B, H, Tq, Tk), nullable: the probabilities before dropout (GHT's feature map A).
template <class T>
void attention_forward(const AttentionArgs& a, const T* Q, const T* K, const T* V, T* O, float* lse, float* probs);

// dQ, dK, dV are overwritten. `workspace` holds attention_backward_workspace(a) bytes (δ, fp32
// accumulators): callers allocate it once.
template <class T>
void attention_backward(const AttentionArgs& a, const T* Q, const T* K, const T* V, const T* O, const float* lse,
                        const T* dO, T* dQ, T* dK, T* dV, void* workspace);
size_t attention_backward_workspace(const AttentionArgs& a);

// The Hopper forwards (bf16 tensors, D ∈ {64, 128}, no dropout, Precision::bf16), off by default:
//   cp_async  kernels/cuda/attention_hopper.cu: wgmma with cp.async staging, every warp copying and
//             computing; on an H200 about half the mma.sync kernel's speed (its top comment);
//   tma       kernels/cuda/attention_hopper_tma.cu: FlashAttention-3's design — TMA copies by a
//             producer warpgroup, 128-byte swizzled tiles, V read through wgmma's transpose bit,
//             two computing warpgroups taking turns at the tensor cores.
// PILLARS_HOPPER_ATTENTION=1 (or cp_async) or =tma in the environment, or set_hopper_forward,
// chooses one wherever it applies; set_hopper_forward returns the choice before.
// ScopedHopperForward chooses for a scope (a test, a bench column).
enum class HopperForward { off, cp_async, tma };
HopperForward set_hopper_forward(HopperForward forward);
class ScopedHopperForward {
 public:
  explicit ScopedHopperForward(HopperForward forward) : before_(set_hopper_forward(forward)) {}
  ~ScopedHopperForward() { set_hopper_forward(before_); }
  ScopedHopperForward(const ScopedHopperForward&) = delete;
  ScopedHopperForward& operator=(const ScopedHopperForward&) = delete;

 private:
  HopperForward before_;
};
bool hopper_attention_available();   // this GPU is a Hopper (9.x) and this build has its sm_90a code
int64_t hopper_attention_launches(); // forwards it has run in this process (the tests check it ran)

} // namespace pillars::cuda
