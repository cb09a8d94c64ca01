// Fused softmax cross-entropy with label smoothing and ignore_index on the GPU, forward and
// backward (same function as kernels/cpu/cross_entropy.h).
//
// Shapes: logits x (N, V) — the op's (..., V) flattened —, targets t (N) i32, lse (N), L a scalar,
// dL a scalar on the device, dlogits (N, V) (may be x's own buffer: the backward op is in place).
// With ε the smoothing, q_v = (1 − ε)·[v = t_n] + ε/V and lse_n = log Σ_v exp(x_{n,v}):
//   loss_n = lse_n − (1 − ε)·x_{n,t} − (ε/V)·Σ_v x_{n,v},   L = Σ_{valid n} loss_n / n_valid (0 if none)
//   dx_{n,v} = (exp(x_{n,v} − lse_n) − q_v) · dL / n_valid on valid rows, 0 on the others.
// A row is valid when t_n ≠ ignore_index and 0 ≤ t_n < V. (The CPU kernel throws on a target
// outside [0, V) that is not ignore_index; the GPU cannot throw, so such a row is treated as
// ignored: lse 0, no loss, zero gradient, not counted in n_valid.)
//
// Algorithm, forward: a team per row — a warp for V ≤ 1024, a block of 256 threads up to 16384,
// of 512 beyond (vocabularies of 10k+ classes). One pass over the row, 16-byte loads when
// V % 4 == 0 and the pointer is aligned: each thread keeps a running max m and s = Σ exp(x − m)
// (rescaled, s ← s·exp(m − x), whenever a larger x arrives) and Σ x; the team combines them —
// M = max m, S = Σ s·exp(m − M), lse = M + log S — and one thread reads x_{n,t} and writes lse_n
// and loss_n (into the workspace). A single block then adds the row losses in a fixed order in
// fp64, counts the valid rows and writes L: deterministic, no atomics.
// Algorithm, backward: a single block counts the valid rows and stores scale = dL / n_valid in
// the workspace (once per call, read by every row); then a team per row writes
// (exp(x − lse) − ε/V)·scale, minus (1 − ε)·scale at the target — each thread reads an element
// before it writes the same element, and no thread touches another's, which makes the op safe in
// place.
//
// The API is cross_entropy.h; engine/ops/cuda/cross_entropy.cu adapts the ops to it.
#include "kernels/cuda/cross_entropy.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/rows.cuh"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr float kNegInf = -INFINITY;
constexpr int kCountThreads = 1024; // the single-block kernels (mean of the losses, valid rows)

// Zeroes the elements of a row of n floats that team thread t owns (the units of for_each_owned).
template <int kTeam, bool kVec4>
__device__ void zero_owned(float* row, int64_t n, int t) {
  if constexpr (kVec4) {
    for (int64_t u = t; u < n / 4; u += kTeam) reinterpret_cast<float4*>(row)[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  } else {
    for (int64_t i = t; i < n; i += kTeam) row[i] = 0.0f;
  }
}

// Adds v to a running (max m, s = Σ exp(x − m)) pair.
__device__ __forceinline__ void online_add(float& m, float& s, float v) {
  if (v > m) {
    s *= expf(m - v); // (m = −inf: s is 0 and stays 0)
    m = v;
  }
  s += m == kNegInf ? 0.0f : expf(v - m); // (m = −inf means v = −inf too: exp would be NaN)
}

using RowParams = CrossEntropyParams;

__device__ __forceinline__ bool valid_target(int32_t t, const RowParams& p) {
  return t != p.ignore_index && t >= 0 && t < p.V;
}

// The team's rows: team r of the grid takes rows r, r + R, ... (R teams in all). Teams are whole
// warps or whole blocks, so a team may leave the loop on its own.
template <int kTeam>
__device__ int64_t first_team_row() {
  return int64_t{blockIdx.x} * (kTeam <= 32 ? 128 / kTeam : 1) + threadIdx.x / kTeam;
}
template <int kTeam>
__device__ int64_t team_row_step() {
  return int64_t{gridDim.x} * (kTeam <= 32 ? 128 / kTeam : 1);
}

template <int kTeam, bool kVec4>
__global__ void __launch_bounds__(kTeam <= 32 ? 128 : kTeam)
    forward_rows_kernel(RowParams p, const float* logits, const int32_t* targets, float* lse, float* row_loss) {
  __shared__ float scratch[32];
  const int t = threadIdx.x % kTeam;
  for (int64_t row = first_team_row<kTeam>(); row < p.N; row += team_row_step<kTeam>()) {
    const int32_t target = targets[row];
    if (!valid_target(target, p)) {
      if (t == 0) lse[row] = row_loss[row] = 0.0f;
      continue; // (uniform over the team)
    }
    const float* x = logits + row * p.V;
    float m = kNegInf, s = 0.0f, sum_x = 0.0f;
    for_each_owned<kTeam, kVec4>(x, p.V, t, [&](int64_t, float v) {
      online_add(m, s, v);
      sum_x += v;
    });
    const float row_max = team_reduce<kTeam>(m, Max{}, scratch);
    const float sum_exp = team_reduce<kTeam>(m == kNegInf ? 0.0f : s * expf(m - row_max), Sum{}, scratch);
    const float row_sum_x = team_reduce<kTeam>(sum_x, Sum{}, scratch);
    if (t == 0) {
      const float row_lse = row_max + logf(sum_exp);
      lse[row] = row_lse;
      row_loss[row] = row_lse - p.one_minus_smoothing * x[target] - p.uniform * row_sum_x;
    }
  }
}

// Σ over a block of kCountThreads threads, in a fixed order; the total is valid in thread 0.
template <class T>
__device__ T block_sum_to_thread0(T v, T* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kCountThreads / 32; ++w) total += scratch[w];
  return total;
}

// One block: L = Σ row_loss / n_valid, thread i summing rows i, i + 1024, ... in fp64.
__global__ void __launch_bounds__(kCountThreads)
    mean_loss_kernel(RowParams p, const float* row_loss, const int32_t* targets, float* loss) {
  __shared__ double loss_scratch[32];
  __shared__ long long count_scratch[32];
  double total = 0.0;
  long long valid = 0;
  for (int64_t n = threadIdx.x; n < p.N; n += kCountThreads) {
    total += static_cast<double>(row_loss[n]); // (0 on the rows that are not valid)
    valid += valid_target(targets[n], p) ? 1 : 0;
  }
  total = block_sum_to_thread0(total, loss_scratch);
  valid = block_sum_to_thread0(valid, count_scratch);
  if (threadIdx.x == 0) *loss = valid == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(valid));
}

// One block: *scale = dL / n_valid (0 when no row is valid; dL = 1 when dL is nullptr), as the CPU
// rounds it.
__global__ void __launch_bounds__(kCountThreads)
    gradient_scale_kernel(RowParams p, const int32_t* targets, const float* dL, float* scale) {
  __shared__ long long count_scratch[32];
  long long valid = 0;
  for (int64_t n = threadIdx.x; n < p.N; n += kCountThreads) valid += valid_target(targets[n], p) ? 1 : 0;
  valid = block_sum_to_thread0(valid, count_scratch);
  if (threadIdx.x == 0) *scale = valid == 0 ? 0.0f : (dL ? *dL : 1.0f) / static_cast<float>(valid);
}

// dlogits may be logits' own buffer: each thread reads its elements (for_each_owned loads them)
// before it writes them, and touches no other thread's.
template <int kTeam, bool kVec4>
__global__ void __launch_bounds__(kTeam <= 32 ? 128 : kTeam)
    backward_rows_kernel(RowParams p, const float* logits, const int32_t* targets, const float* lse,
                         const float* scale_ptr, float* dlogits) {
  const int t = threadIdx.x % kTeam;
  const float scale = *scale_ptr;
  const float target_term = p.one_minus_smoothing * scale; // (1 − ε)·scale, subtracted at the target
  for (int64_t row = first_team_row<kTeam>(); row < p.N; row += team_row_step<kTeam>()) {
    const int32_t target = targets[row];
    float* dx = dlogits + row * p.V;
    if (!valid_target(target, p)) {
      zero_owned<kTeam, kVec4>(dx, p.V, t);
      continue;
    }
    const float row_lse = lse[row];
    for_each_owned<kTeam, kVec4>(logits + row * p.V, p.V, t, [&](int64_t i, float v) {
      float d = (expf(v - row_lse) - p.uniform) * scale;
      if (i == target) d -= target_term;
      dx[i] = d;
    });
  }
}

// ---- launching -------------------------------------------------------------------------------------

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Calls f(team, vec4) as integral constants: the team size for rows of V classes.
template <class F>
void with_row_team(int64_t V, bool vec4, F&& f) {
  auto pick_vec = [&](auto team) {
    if (vec4)
      f(team, std::true_type{});
    else
      f(team, std::false_type{});
  };
  if (V <= 1024)
    pick_vec(std::integral_constant<int, 32>{});
  else if (V <= 16384)
    pick_vec(std::integral_constant<int, 256>{});
  else
    pick_vec(std::integral_constant<int, 512>{});
}

} // namespace

void cross_entropy_rows_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                                float* row_loss) {
  if (p.N == 0) return;
  with_row_team(p.V, p.V % 4 == 0 && aligned16(logits), [&](auto team, auto vec4) {
    constexpr int kTeam = decltype(team)::value;
    constexpr int kTeamsPerBlock = kTeam <= 32 ? 128 / kTeam : 1;
    forward_rows_kernel<kTeam, decltype(vec4)::value>
        <<<blocks_for(p.N, kTeamsPerBlock), kTeam * kTeamsPerBlock, 0, stream()>>>(p, logits, targets, lse, row_loss);
    PILLARS_CUDA_LAUNCHED("cross_entropy forward_rows_kernel");
  });
}

void cross_entropy_mean_loss(const CrossEntropyParams& p, const float* row_loss, const int32_t* targets, float* loss) {
  mean_loss_kernel<<<1, kCountThreads, 0, stream()>>>(p, row_loss, targets, loss);
  PILLARS_CUDA_LAUNCHED("cross_entropy mean_loss_kernel");
}

void cross_entropy_scale(const CrossEntropyParams& p, const int32_t* targets, const float* dL, float* scale) {
  gradient_scale_kernel<<<1, kCountThreads, 0, stream()>>>(p, targets, dL, scale);
  PILLARS_CUDA_LAUNCHED("cross_entropy gradient_scale_kernel");
}

void cross_entropy_rows_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets,
                                 const float* lse, const float* scale, float* dlogits) {
  if (p.N == 0) return;
  with_row_team(p.V, p.V % 4 == 0 && aligned16(logits) && aligned16(dlogits), [&](auto team, auto vec4) {
    constexpr int kTeam = decltype(team)::value;
    constexpr int kTeamsPerBlock = kTeam <= 32 ? 128 / kTeam : 1;
    backward_rows_kernel<kTeam, decltype(vec4)::value>
        <<<blocks_for(p.N, kTeamsPerBlock), kTeam * kTeamsPerBlock, 0, stream()>>>(p, logits, targets, lse, scale,
                                                                                   dlogits);
    PILLARS_CUDA_LAUNCHED("cross_entropy backward_rows_kernel");
  });
}

void cross_entropy_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* loss,
                           float* lse, float* row_loss) {
  PILLARS_CHECK(p.N == 0 || row_loss, "cross_entropy: the CUDA kernel needs its workspace");
  cross_entropy_rows_forward(p, logits, targets, lse, row_loss);
  cross_entropy_mean_loss(p, row_loss, targets, loss);
}

void cross_entropy_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, const float* lse,
                            const float* dL, float* dlogits, float* scale) {
  if (p.N == 0) return;
  PILLARS_CHECK(scale, "cross_entropy_backward: the CUDA kernel needs its workspace");
  cross_entropy_scale(p, targets, dL, scale);
  cross_entropy_rows_backward(p, logits, targets, lse, scale, dlogits);
}

} // namespace pillars::cuda
