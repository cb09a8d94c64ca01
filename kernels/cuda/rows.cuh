// The building blocks of the row-wise kernels (softmax.cu, layernorm.cu, cross_entropy.cu): a row
// of floats is processed by a *team* of threads — an aligned group of lanes of one warp, or a whole
// block — and reduced within the team in a fixed order, so results are reproducible bit for bit.
//   team_reduce       a max or sum over the team, its result in every thread of the team
//   RowLayout         how a row short enough for registers is spread over a team (units of one
//                     float, or float4), with load_share / store_share and for_each_team_row
//   for_each_owned    the elements of a long row that one team thread visits, loads in flight
// For nvcc only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace pillars::cuda {

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduces v over a team of kTeam threads and gives every thread of the team the result. A team of
// ≤ 32 threads is an aligned group of lanes of one warp: a butterfly of xor-shuffles, after which
// all lanes hold bitwise the same value (each step combines the same two halves, commutatively).
// A larger team is the whole block: each warp's result goes through shared memory and every
// thread folds them in warp order (a fixed order, so results are reproducible). `scratch` holds
// 32 floats of shared memory; the trailing barrier lets the caller reuse it at once.
template <int kTeam, class Op>
__device__ float team_reduce(float v, Op op, float* scratch) {
  constexpr int kLanes = kTeam < 32 ? kTeam : 32;
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (kTeam > 32) {
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = scratch[0];
#pragma unroll
    for (int w = 1; w < kTeam / 32; ++w) v = op(v, scratch[w]);
    __syncthreads();
  }
  return v;
}

// ---- rows held in registers ----------------------------------------------------------------------

// How a row of up to kTeam·kPerThread floats is spread over a team of kTeam threads. Thread t holds
// kUnits units; a unit is one float, or with kVec4 four consecutive floats moved as one 16-byte
// float4. Unit u of thread t is unit u·kTeam + t of the row, so at each u the team touches one
// contiguous stretch of memory (coalesced). Teams of ≤ 32 threads share a block of 128 threads;
// a larger team is a block of its own.
template <int kTeam_, int kUnits_, bool kVec4_>
struct RowLayout {
  static constexpr int kTeam = kTeam_, kUnits = kUnits_;
  static constexpr bool kVec4 = kVec4_;
  static constexpr int kUnitFloats = kVec4 ? 4 : 1;
  static constexpr int kPerThread = kUnits * kUnitFloats;
  static constexpr int kCapacity = kTeam * kPerThread;
  static constexpr int kBlock = kTeam <= 32 ? 128 : kTeam;
  static constexpr int kTeamsPerBlock = kBlock / kTeam;
  // The row column of the first float of unit u of team thread t, and of register j.
  __device__ static int unit_column(int u, int t) { return (u * kTeam + t) * kUnitFloats; }
  __device__ static int column(int j, int t) { return unit_column(j / kUnitFloats, t) + j % kUnitFloats; }
};

// v[j] ← element j of thread t's share of `row` (n floats), or `fill` past the end of the row.
// With kVec4, n % 4 == 0, so a unit is either wholly inside the row or wholly past it.
template <class L>
__device__ void load_share(const float* row, int n, int t, float (&v)[L::kPerThread], float fill) {
#pragma unroll
  for (int u = 0; u < L::kUnits; ++u) {
    const int col = (u * L::kTeam + t) * L::kUnitFloats;
    if constexpr (L::kVec4) {
      float4 q = make_float4(fill, fill, fill, fill);
      if (col < n) q = *reinterpret_cast<const float4*>(row + col);
      v[4 * u] = q.x, v[4 * u + 1] = q.y, v[4 * u + 2] = q.z, v[4 * u + 3] = q.w;
    } else {
      v[u] = col < n ? row[col] : fill;
    }
  }
}

// The inverse of load_share: writes thread t's share of the row (the elements before n only).
template <class L>
__device__ void store_share(float* row, int n, int t, const float (&v)[L::kPerThread]) {
#pragma unroll
  for (int u = 0; u < L::kUnits; ++u) {
    const int col = (u * L::kTeam + t) * L::kUnitFloats;
    if (col >= n) continue;
    if constexpr (L::kVec4)
      *reinterpret_cast<float4*>(row + col) = make_float4(v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3]);
    else
      row[col] = v[u];
  }
}

// The loop every register kernel runs: `body(row, n, t)` for each row of the team, where n is the
// row length, or 0 for a team past the last row. Such a team still runs the body (on padding
// only), because its lanes take part in its warp's shuffles; the loop bounds are uniform per block.
template <class L, class Body>
__device__ void for_each_team_row(int64_t rows, int len, Body body) {
  const int team = threadIdx.x / L::kTeam, t = threadIdx.x % L::kTeam;
  const int64_t step = int64_t{gridDim.x} * L::kTeamsPerBlock;
  for (int64_t first = int64_t{blockIdx.x} * L::kTeamsPerBlock; first < rows; first += step) {
    const int64_t row = first + team;
    body(row < rows ? row : rows - 1, row < rows ? len : 0, t);
  }
}

// ---- rows too long for registers -----------------------------------------------------------------

// Calls f(i, x[i]) for every element of a row of n floats that team thread t owns: units
// t, t + kTeam, ... (a unit is a float4 with kVec4 — n % 4 == 0 — else a float), four units
// loaded before any is used so that several loads are in flight.
template <int kTeam, bool kVec4, class F>
__device__ void for_each_owned(const float* row, int64_t n, int t, F f) {
  if constexpr (kVec4) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t units = n / 4;
    int64_t u = t;
    for (; u + 3 * kTeam < units; u += 4 * kTeam) {
      float4 q[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = row4[u + k * kTeam];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int64_t i = 4 * (u + k * kTeam);
        f(i, q[k].x), f(i + 1, q[k].y), f(i + 2, q[k].z), f(i + 3, q[k].w);
      }
    }
    for (; u < units; u += kTeam) {
      const float4 q = row4[u];
      f(4 * u, q.x), f(4 * u + 1, q.y), f(4 * u + 2, q.z), f(4 * u + 3, q.w);
    }
  } else {
    int64_t i = t;
    for (; i + 3 * kTeam < n; i += 4 * kTeam) {
      float q[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = row[i + k * kTeam];
#pragma unroll
      for (int k = 0; k < 4; ++k) f(i + k * kTeam, q[k]);
    }
    for (; i < n; i += kTeam) f(i, row[i]);
  }
}

} // namespace pillars::cuda
