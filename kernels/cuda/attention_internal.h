// Private to kernels/cuda/attention.cu, attention_tensor_core.cu and attention_hopper*.cu: the
// problem description every attention kernel receives, the mask rule, the dropout stream, and the
// entry points of the tensor-core path. Nothing outside those files includes this header.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention.h"
#include "runtime/cuda_runtime.h"
#include "kernels/philox.h"

namespace pillars::cuda::attention_detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// What every kernel needs to know, passed by value. Dimensions are int (the dispatcher checks
// that they fit); flat element offsets are computed in 64 bits.
struct Problem {
  int B = 0, H = 0, Tq = 0, Tk = 0, D = 0;
  float scale = 1.0f;      // softmax scale s
  float scale_log2 = 1.0f; // s · log2 e: logits in base-2 units, so that every exponential is one exp2
  bool causal = false;
  const int32_t* key_lengths = nullptr; // device (B) or nullptr
  float dropout_p = 0.0f;               // 0: no dropout
  float keep_scale = 1.0f;              // 1 / (1 − p)
  uint64_t seed = 0, rng_offset = 0;
  const uint64_t* run_seed = nullptr; // device; nullptr reads as 0
};

// ---- element access ----------------------------------------------------------------------------

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Offset of row `i` of head h of batch b in a (B, T, H, D) tensor; consecutive rows are H·D apart.
__device__ __forceinline__ int64_t head_row(const Problem& p, int b, int T, int h, int i) {
  return ((static_cast<int64_t>(b) * T + i) * p.H + h) * p.D;
}

// ---- masks ---------------------------------------------------------------------------------------

// Every mask is a prefix of the key axis (attention.h): query row i of batch b sees keys [0, n(i))
// with n(i) = min(Tk, key_lengths[b], causal ? i + 1 + Tk − Tq : Tk), clamped at 0. Rows i ≥ Tq
// (the padding of a partial tile) see nothing, so they contribute nothing anywhere.
struct RowMask {
  int limit; // min(Tk, key_lengths[b])
  int shift; // Tk − Tq + 1 when causal, else a value that never binds
  int Tq;
  __device__ __forceinline__ int visible(int i) const {
    if (i >= Tq) return 0;
    const int n = min(limit, i + shift);
    return n > 0 ? n : 0;
  }
};

__device__ __forceinline__ RowMask row_mask(const Problem& p, int b) {
  RowMask m;
  m.limit = p.key_lengths ? min(p.Tk, p.key_lengths[b]) : p.Tk;
  m.shift = p.causal ? p.Tk - p.Tq + 1 : p.Tk; // (i ≥ 0, so i + Tk ≥ Tk ≥ limit)
  m.Tq = p.Tq;
  return m;
}

// The first query row that sees key j (rows see prefixes that grow with i): with the causal
// mask, i + 1 + Tk − Tq > j ⟺ i ≥ j − (Tk − Tq); without it, row 0 (if j < limit at all).
__device__ __forceinline__ int first_row_seeing(const Problem& p, int j) {
  if (!p.causal) return 0;
  const int i = j - (p.Tk - p.Tq);
  return i > 0 ? i : 0;
}

// ---- dropout (the Philox stream of kernels/philox.h) ----------------------------------------------

__device__ __forceinline__ uint64_t dropout_seed(const Problem& p) {
  return p.seed + (p.run_seed ? *p.run_seed : uint64_t{0});
}

// Word k ∈ [0, 4) of a Philox block, without indexing an array by a run-time value (which would
// put the block in local memory).
__device__ __forceinline__ uint32_t philox_word(const Philox4& r, uint32_t k) {
  return k == 0 ? r.v[0] : k == 1 ? r.v[1] : k == 2 ? r.v[2] : r.v[3];
}

// u = (bits >> 8) · 2^-24, exactly as philox_uniform computes it; kept iff u ≥ p.
__device__ __forceinline__ float keep_multiplier(const Problem& p, uint32_t bits) {
  const float u = static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
  return u >= p.dropout_p ? p.keep_scale : 0.0f;
}

// The dropout multiplier Z ∈ {0, 1/(1−p)} of element (b·H + h, i, j): flat index ((bh·Tq + i)·Tk + j).
__device__ __forceinline__ float dropout_multiplier(const Problem& p, uint64_t seed, int bh, int i, int j) {
  const uint64_t n = p.rng_offset + (static_cast<uint64_t>(bh) * p.Tq + i) * p.Tk + j;
  return keep_multiplier(p, philox_word(philox4x32_10(n >> 2, seed), static_cast<uint32_t>(n & 3)));
}

// The multipliers of keys j and j + 1 of one row: one Philox block serves both unless they
// straddle a block boundary.
__device__ __forceinline__ void dropout_multiplier_pair(const Problem& p, uint64_t seed, int bh, int i, int j,
                                                        float& z0, float& z1) {
  const uint64_t n = p.rng_offset + (static_cast<uint64_t>(bh) * p.Tq + i) * p.Tk + j;
  const Philox4 r = philox4x32_10(n >> 2, seed);
  const uint32_t k = static_cast<uint32_t>(n & 3);
  z0 = keep_multiplier(p, philox_word(r, k));
  z1 = keep_multiplier(p, k == 3 ? philox4x32_10((n + 1) >> 2, seed).v[0] : philox_word(r, k + 1));
}

// ---- launching ------------------------------------------------------------------------------------

// Launches Kernel on the backend's stream with `smem` bytes of dynamic shared memory, raising the
// kernel's limit the first time (above 48 KB it must be asked for). Each kernel is always launched
// with the same `smem`, a function of its template parameters.
template <auto Kernel, class... Args>
void launch(dim3 grid, int threads, size_t smem, const char* name, Args... args) {
  static const bool configured = [smem] {
    PILLARS_CUDA_CHECK(
        cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    return true;
  }();
  (void)configured;
  Kernel<<<grid, threads, smem, stream()>>>(args...);
  PILLARS_CUDA_LAUNCHED(name);
}

// ---- the tensor-core path (attention_tensor_core.cu) ---------------------------------------------

// Whether the tensor-core kernels take this problem: D ∈ {32, 64, 128}, a positive scale, and
// 16-byte aligned tensors (cp.async and vector loads).
bool tensor_core_supports(const Problem& p, const void* const* tensors, int count);

template <class T>
void tensor_core_forward(const Problem& p, const T* Q, const T* K, const T* V, T* O, float* lse);

// The Hopper forwards (attention_hopper.cu): whether one is on and takes this problem, and the
// forward, which runs the one chosen (set_hopper_forward); the TMA design is in
// attention_hopper_tma.cu.
bool hopper_supports(const Problem& p, const void* const* tensors, int count);
void hopper_forward(const Problem& p, const __nv_bfloat16* Q, const __nv_bfloat16* K, const __nv_bfloat16* V,
                    __nv_bfloat16* O, float* lse);
void hopper_tma_forward(const Problem& p, const __nv_bfloat16* Q, const __nv_bfloat16* K, const __nv_bfloat16* V,
                        __nv_bfloat16* O, float* lse);

// delta (B, H, Tq) = rowsum(dO ∘ O); lse2 (B, H, Tq) = lse · log2 e (0 for rows that see nothing).
template <class T>
void tensor_core_backward(const Problem& p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                          const float* lse2, T* dQ, T* dK, T* dV);

} // namespace pillars::cuda::attention_detail
