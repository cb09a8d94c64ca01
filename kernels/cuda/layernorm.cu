// Layer normalization over the last axis on the GPU, forward and backward (same function as
// kernels/cpu/layernorm.h).
//
// Shapes: x (N, D) — the op's (..., D) flattened —, γ, β (D) or absent; y (N, D); μ, r (N).
//   μ = (1/D) Σ_d x_d,   σ² = (1/D) Σ_d (x_d − μ)²,   r = 1 / sqrt(σ² + eps)
//   x̂_d = (x_d − μ) · r,   y_d = x̂_d · γ_d + β_d
// Backward, g = dL/dy, ĝ = g ∘ γ:
//   dx_d = r · (ĝ_d − mean(ĝ) − x̂_d · mean(ĝ ∘ x̂)),   dγ_d = Σ_n g_{n,d} x̂_{n,d},   dβ_d = Σ_n g_{n,d}
//
// Algorithm. A team of threads per row — a warp (or part of one, for D < 128) when D ≤ 512, a
// block of 256 threads when D ≤ 8192 — holds the row in registers (16-byte loads when D % 4 == 0
// and the pointers allow), so x is read once:
//   forward:  Σ x → μ; then Σ (x − μ)² from the registers (two passes over registers, none over
//             memory: the variance never suffers the cancellation of E[x²] − μ²); then y.
//   backward: x and g in registers; Σ ĝ and Σ ĝ·x̂ → dx.
// All statistics are fp32; reductions are shuffles (and, for a block, one exchange through shared
// memory) in a fixed order. Rows longer than 8192 take a block of 512 threads per row and re-read
// x from memory for each pass.
//
// dγ, dβ deterministically, without atomics. The grid of the backward kernel is a fixed number P
// of teams (a function of N, D and whether 16-byte accesses are possible, see partial_teams);
// team p handles rows p, p + P, ... and, because a thread owns the same columns in every row, it
// sums g·x̂ and g of its columns over its rows in registers (fp32, at most ⌈N/P⌉ rows). Each team
// writes its share into the workspace — partials (2, P, D) — and a second kernel adds the P
// partials of each column in a fixed order in fp64, so the result is the same bits on every run.
//
// The API is layernorm.h; engine/ops/cuda/layernorm.cu adapts the ops to it.
#include "kernels/cuda/layernorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/rows.cuh"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int64_t kMaxRegisterRow = 8192; // floats: longer rows take the generic kernels
constexpr int kGenericThreads = 512;      // the block of the generic (long-row) kernels
// The backward grid: each team takes at least kMinRowsPerTeam rows (so the partials cost little
// next to the rows), and at most kMaxPartialThreads threads are launched (enough to keep the
// memory system busy; more would only add partials).
constexpr int64_t kMinRowsPerTeam = 4;
constexpr int64_t kMaxPartialThreads = 131072;

// ---- rows held in registers (RowLayout, load_share, team_reduce: rows.cuh) -----------------------

// One unit of a parameter vector p (γ or β) at column col: `fill` where p is absent or col ≥ n.
template <class L>
struct Unit {
  float v[L::kUnitFloats];
};
template <class L>
__device__ Unit<L> load_unit(const float* p, int col, int n, float fill) {
  Unit<L> r;
  if constexpr (L::kVec4) {
    float4 q = make_float4(fill, fill, fill, fill);
    if (p && col < n) q = __ldg(reinterpret_cast<const float4*>(p + col));
    r.v[0] = q.x, r.v[1] = q.y, r.v[2] = q.z, r.v[3] = q.w;
  } else {
    r.v[0] = p && col < n ? __ldg(p + col) : fill;
  }
  return r;
}

template <class L>
__global__ void __launch_bounds__(L::kBlock)
    forward_rows_kernel(int64_t rows, int D, const float* x, const float* gamma, const float* beta, float* y,
                        float* mean_out, float* rstd_out, float eps) {
  __shared__ float scratch[32];
  for_each_team_row<L>(rows, D, [&](int64_t row, int n, int t) {
    float v[L::kPerThread];
    load_share<L>(x + row * D, n, t, v, 0.0f);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) sum += v[j];
    const float mean = team_reduce<L::kTeam>(sum, Sum{}, scratch) / static_cast<float>(D);
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j)
      if (L::column(j, t) < n) sq += (v[j] - mean) * (v[j] - mean); // (padding is not x − μ = 0)
    const float var = team_reduce<L::kTeam>(sq, Sum{}, scratch) / static_cast<float>(D);
    const float rstd = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int u = 0; u < L::kUnits; ++u) {
      const Unit<L> gm = load_unit<L>(gamma, L::unit_column(u, t), n, 1.0f);
      const Unit<L> bt = load_unit<L>(beta, L::unit_column(u, t), n, 0.0f);
#pragma unroll
      for (int k = 0; k < L::kUnitFloats; ++k) {
        float& xv = v[u * L::kUnitFloats + k];
        const float xhat = (xv - mean) * rstd;
        xv = xhat * gm.v[k] + bt.v[k]; // (γ = 1, β = 0 when absent, as on the CPU)
      }
    }
    store_share<L>(y + row * D, n, t, v);
    if (t == 0 && n > 0) {
      mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
  });
}

// dx for the team's rows; with kParamGrads also the team's share of dγ and dβ, written to
// partials[p, :] and partials[P + p, :] (P = the grid's team count).
template <class L, bool kParamGrads>
__global__ void __launch_bounds__(L::kBlock)
    backward_rows_kernel(int64_t rows, int D, const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* partials) {
  __shared__ float scratch[32];
  constexpr int kAcc = kParamGrads ? L::kPerThread : 1;
  float acc_gxhat[kAcc] = {}, acc_g[kAcc] = {}; // Σ g·x̂ and Σ g over the team's rows, per column
  for_each_team_row<L>(rows, D, [&](int64_t row, int n, int t) {
    float xv[L::kPerThread], g[L::kPerThread];
    load_share<L>(x + row * D, n, t, xv, 0.0f);
    load_share<L>(dy + row * D, n, t, g, 0.0f); // padding g = 0: adds nothing anywhere
    const float mu = n > 0 ? mean[row] : 0.0f, r = n > 0 ? rstd[row] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f; // Σ ĝ, Σ ĝ·x̂
#pragma unroll
    for (int u = 0; u < L::kUnits; ++u) {
      const Unit<L> gm = load_unit<L>(gamma, L::unit_column(u, t), n, 1.0f);
#pragma unroll
      for (int k = 0; k < L::kUnitFloats; ++k) {
        const int j = u * L::kUnitFloats + k;
        const float gh = g[j] * gm.v[k];
        sum_g += gh;
        sum_gx += gh * (xv[j] - mu) * r;
        if constexpr (kParamGrads) {
          acc_gxhat[j] += g[j] * ((xv[j] - mu) * r);
          acc_g[j] += g[j];
        }
      }
    }
    const float mean_g = team_reduce<L::kTeam>(sum_g, Sum{}, scratch) / static_cast<float>(D);
    const float mean_gx = team_reduce<L::kTeam>(sum_gx, Sum{}, scratch) / static_cast<float>(D);
#pragma unroll
    for (int u = 0; u < L::kUnits; ++u) {
      const Unit<L> gm = load_unit<L>(gamma, L::unit_column(u, t), n, 1.0f); // (again: not kept in registers)
#pragma unroll
      for (int k = 0; k < L::kUnitFloats; ++k) {
        const int j = u * L::kUnitFloats + k;
        const float gh = g[j] * gm.v[k];
        xv[j] = r * (gh - mean_g - (xv[j] - mu) * r * mean_gx);
      }
    }
    store_share<L>(dx + row * D, n, t, xv);
  });
  if constexpr (kParamGrads) {
    const int t = threadIdx.x % L::kTeam;
    const int64_t team = int64_t{blockIdx.x} * L::kTeamsPerBlock + threadIdx.x / L::kTeam;
    const int64_t teams = int64_t{gridDim.x} * L::kTeamsPerBlock;
    store_share<L>(partials + team * D, D, t, acc_gxhat);
    store_share<L>(partials + (teams + team) * D, D, t, acc_g);
  }
}

// Calls f(L{}) with the smallest register layout whose capacity is at least D floats
// (D ≤ kMaxRegisterRow): teams of 1, 2, .. 32 lanes with one unit each, then a warp with 2, 4, ..
// units (≤ 16 floats per lane: D ≤ 512), then a 256-thread block with 4 .. 32 floats per thread.
// (The backward keeps x, g and two accumulators per float: 16 floats per lane is what a warp
// layout can hold without starving the SM of warps.)
template <bool kVec4, int kTeam = 1, int kUnits = 1, class F>
void with_register_layout(int64_t D, F&& f) {
  using L = RowLayout<kTeam, kUnits, kVec4>;
  constexpr int kMaxWarpUnits = 16 / L::kUnitFloats, kMaxBlockUnits = 32 / L::kUnitFloats;
  if (D <= L::kCapacity) {
    f(L{});
  } else if constexpr (kTeam < 32) {
    with_register_layout<kVec4, kTeam * 2, kUnits>(D, f);
  } else if constexpr (kTeam == 32 && kUnits < kMaxWarpUnits) {
    with_register_layout<kVec4, 32, kUnits * 2>(D, f);
  } else if constexpr (kTeam == 32) {
    with_register_layout<kVec4, 256, 4 / L::kUnitFloats>(D, f);
  } else if constexpr (kUnits < kMaxBlockUnits) {
    with_register_layout<kVec4, 256, kUnits * 2>(D, f);
  }
  static_assert(RowLayout<256, kMaxBlockUnits, kVec4>::kCapacity == kMaxRegisterRow);
}

// ---- rows too long for registers: a block per row, x re-read for each pass ------------------------

template <int kThreads>
__device__ float block_sum(float v, float* scratch) {
  return team_reduce<kThreads>(v, Sum{}, scratch);
}

__global__ void __launch_bounds__(kGenericThreads)
    forward_generic_kernel(int64_t rows, int64_t D, const float* x, const float* gamma, const float* beta, float* y,
                           float* mean_out, float* rstd_out, float eps) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * D;
    float sum = 0.0f;
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) sum += xr[d];
    const float mean = block_sum<kGenericThreads>(sum, scratch) / static_cast<float>(D);
    float sq = 0.0f;
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) sq += (xr[d] - mean) * (xr[d] - mean);
    const float rstd = 1.0f / sqrtf(block_sum<kGenericThreads>(sq, scratch) / static_cast<float>(D) + eps);
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) {
      const float xhat = (xr[d] - mean) * rstd;
      y[row * D + d] = xhat * (gamma ? gamma[d] : 1.0f) + (beta ? beta[d] : 0.0f);
    }
    if (threadIdx.x == 0) {
      mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
  }
}

// Block p handles rows p, p + P, ...; with partials, thread t accumulates the dγ/dβ shares of its
// columns d = t, t + 512, ... directly in partials[p, d] and partials[P + p, d] (only it touches
// them: no race, no barrier).
__global__ void __launch_bounds__(kGenericThreads)
    backward_generic_kernel(int64_t rows, int64_t D, const float* x, const float* gamma, const float* mean,
                            const float* rstd, const float* dy, float* dx, float* partials) {
  __shared__ float scratch[32];
  float* part_gxhat = partials ? partials + int64_t{blockIdx.x} * D : nullptr;
  float* part_g = partials ? partials + (int64_t{gridDim.x} + blockIdx.x) * D : nullptr;
  if (partials)
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) part_gxhat[d] = part_g[d] = 0.0f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *xr = x + row * D, *gr = dy + row * D;
    const float mu = mean[row], r = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) {
      const float gh = gr[d] * (gamma ? gamma[d] : 1.0f);
      sum_g += gh;
      sum_gx += gh * (xr[d] - mu) * r;
    }
    const float mean_g = block_sum<kGenericThreads>(sum_g, scratch) / static_cast<float>(D);
    const float mean_gx = block_sum<kGenericThreads>(sum_gx, scratch) / static_cast<float>(D);
    for (int64_t d = threadIdx.x; d < D; d += kGenericThreads) {
      const float g = gr[d], xd = xr[d];
      const float gh = g * (gamma ? gamma[d] : 1.0f);
      dx[row * D + d] = r * (gh - mean_g - (xd - mu) * r * mean_gx);
      if (partials) {
        part_gxhat[d] += g * ((xd - mu) * r);
        part_g[d] += g;
      }
    }
  }
}

// ---- the fixed-order sum of the partials -----------------------------------------------------------

// A block sums 8 columns (one 32-byte sector per partial row: enough for full-speed reads, and
// D/8 blocks keep every SM busy) in 128 slices.
constexpr int kSumColumns = 8, kSumSlices = 128;

// out[d] = Σ_p partials[p, d] for p = 0 .. P−1: blockIdx.y = 0 gives dγ (partials rows [0, P)),
// 1 gives dβ (rows [P, 2P)). Slice s of the block (threadIdx.y) sums p = s, s + 128, ... in fp64,
// then thread s = 0 adds the 128 slice sums in order: a fixed order for a given P.
__global__ void __launch_bounds__(kSumColumns* kSumSlices)
    sum_partials_kernel(const float* partials, int64_t P, int64_t D, float* dgamma, float* dbeta) {
  __shared__ double slice_sum[kSumSlices][kSumColumns];
  const int64_t col = int64_t{blockIdx.x} * kSumColumns + threadIdx.x;
  const float* src = partials + int64_t{blockIdx.y} * P * D;
  double acc = 0.0;
  if (col < D) {
#pragma unroll 4
    for (int64_t p = threadIdx.y; p < P; p += kSumSlices) acc += static_cast<double>(src[p * D + col]);
  }
  slice_sum[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || col >= D) return;
  double total = 0.0;
#pragma unroll 8
  for (int s = 0; s < kSumSlices; ++s) total += slice_sum[s][threadIdx.x];
  (blockIdx.y == 0 ? dgamma : dbeta)[col] = static_cast<float>(total);
}

// ---- launching -------------------------------------------------------------------------------------

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Teams of the backward grid when the parameter gradients are wanted (see the constants above),
// a multiple of the teams per block. Depends on (N, D, vec4) only, so the workspace size and the
// summation order are fixed by the shapes.
int64_t backward_teams(int64_t team, int64_t teams_per_block, int64_t N) {
  int64_t teams = (N + kMinRowsPerTeam - 1) / kMinRowsPerTeam;
  const int64_t most = kMaxPartialThreads / team;
  if (teams > most) teams = most;
  if (teams < 1) teams = 1;
  return (teams + teams_per_block - 1) / teams_per_block * teams_per_block;
}

int64_t partial_teams(int64_t N, int64_t D, bool vec4) {
  if (D > kMaxRegisterRow) return backward_teams(kGenericThreads, 1, N);
  int64_t teams = 0;
  auto count = [&](auto layout) {
    using L = decltype(layout);
    teams = backward_teams(L::kTeam, L::kTeamsPerBlock, N);
  };
  if (vec4)
    with_register_layout<true>(D, count);
  else
    with_register_layout<false>(D, count);
  return teams;
}

using ForwardArgs = LayerNormForwardArgs;

template <bool kVec4>
void forward_in_registers(const ForwardArgs& a) {
  with_register_layout<kVec4>(a.D, [&](auto layout) {
    using L = decltype(layout);
    forward_rows_kernel<L><<<blocks_for(a.N, L::kTeamsPerBlock), L::kBlock, 0, stream()>>>(
        a.N, static_cast<int>(a.D), a.x, a.gamma, a.beta, a.y, a.mean, a.rstd, a.eps);
    PILLARS_CUDA_LAUNCHED("layer_norm forward_rows_kernel");
  });
}

} // namespace

void layer_norm_forward(const LayerNormForwardArgs& a) {
  if (a.N <= 0) return;
  const bool vec4 = a.D % 4 == 0 && aligned16(a.x) && aligned16(a.y) && (!a.gamma || aligned16(a.gamma)) &&
                    (!a.beta || aligned16(a.beta));
  if (a.D > kMaxRegisterRow) {
    forward_generic_kernel<<<blocks_for(a.N, 1), kGenericThreads, 0, stream()>>>(a.N, a.D, a.x, a.gamma, a.beta, a.y,
                                                                                 a.mean, a.rstd, a.eps);
    PILLARS_CUDA_LAUNCHED("layer_norm forward_generic_kernel");
  } else if (vec4) {
    forward_in_registers<true>(a);
  } else {
    forward_in_registers<false>(a);
  }
}

namespace {

using BackwardArgs = LayerNormBackwardArgs;

bool backward_vec4(const BackwardArgs& a) {
  return a.D % 4 == 0 && aligned16(a.x) && aligned16(a.dy) && aligned16(a.dx) && (!a.gamma || aligned16(a.gamma)) &&
         (!a.partials || aligned16(a.partials));
}

template <bool kVec4>
void backward_in_registers(const BackwardArgs& a) {
  with_register_layout<kVec4>(a.D, [&](auto layout) {
    using L = decltype(layout);
    const int D = static_cast<int>(a.D);
    if (a.dgamma) {
      const int64_t teams = backward_teams(L::kTeam, L::kTeamsPerBlock, a.N);
      backward_rows_kernel<L, true><<<static_cast<unsigned>(teams / L::kTeamsPerBlock), L::kBlock, 0, stream()>>>(
          a.N, D, a.x, a.gamma, a.mean, a.rstd, a.dy, a.dx, a.partials);
    } else {
      backward_rows_kernel<L, false><<<blocks_for(a.N, L::kTeamsPerBlock), L::kBlock, 0, stream()>>>(
          a.N, D, a.x, a.gamma, a.mean, a.rstd, a.dy, a.dx, nullptr);
    }
    PILLARS_CUDA_LAUNCHED("layer_norm backward_rows_kernel");
  });
}

} // namespace

void layer_norm_backward(const LayerNormBackwardArgs& a) {
  const bool vec4 = backward_vec4(a);
  if (a.N <= 0 && !a.dgamma) return;
  if (a.D > kMaxRegisterRow) {
    const unsigned blocks = a.dgamma ? static_cast<unsigned>(partial_teams(a.N, a.D, vec4)) : blocks_for(a.N, 1);
    backward_generic_kernel<<<blocks, kGenericThreads, 0, stream()>>>(a.N, a.D, a.x, a.gamma, a.mean, a.rstd, a.dy,
                                                                      a.dx, a.dgamma ? a.partials : nullptr);
    PILLARS_CUDA_LAUNCHED("layer_norm backward_generic_kernel");
  } else if (vec4) {
    backward_in_registers<true>(a);
  } else {
    backward_in_registers<false>(a);
  }
  if (!a.dgamma) return;
  const int64_t P = partial_teams(a.N, a.D, vec4);
  sum_partials_kernel<<<dim3(blocks_for(a.D, kSumColumns), 2), dim3(kSumColumns, kSumSlices), 0, stream()>>>(
      a.partials, P, a.D, a.dgamma, a.dbeta);
  PILLARS_CUDA_LAUNCHED("layer_norm sum_partials_kernel");
}

size_t layer_norm_backward_partials_bytes(int64_t N, int64_t D) {
  const int64_t P = std::max(partial_teams(N, D, false), D % 4 == 0 ? partial_teams(N, D, true) : int64_t{0});
  return static_cast<size_t>(2 * P * D) * sizeof(float);
}

} // namespace pillars::cuda
