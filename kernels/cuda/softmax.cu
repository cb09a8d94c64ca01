// Softmax and log-softmax on the GPU, forward and backward (the math is in softmax.h).
//
// Shapes. The tensor is viewed as (outer, len, inner) around the softmax axis; each of the
// outer·inner rows x[o, 0..len−1, i] is normalized on its own:
//   m = max_l x_l,  s = Σ_l exp(x_l − m),  softmax y_l = exp(x_l − m) / s,  log y_l = x_l − m − log s
// and the backward needs one dot product per row:
//   softmax dx_l = y_l (g_l − Σ_k g_k y_k),   log-softmax dx_l = g_l − exp(y_l) Σ_k g_k.
// Rows never share memory, so threads cooperate only inside a row, for its max and its sums.
//
// Algorithm, inner == 1 (softmax over the last axis: each row is contiguous):
//   * len ≤ 1024: a team of up to 32 lanes of one warp per row (fewer for short rows, so that a
//     warp serves several rows); every lane keeps its share of the row in registers.
//   * 1024 < len ≤ 8192: a block of 256 threads per row, up to 32 floats per thread in registers.
//   Both read x once and write y once — the memory traffic of a copy — with 16-byte loads when
//   len % 4 == 0 and the pointers are 16-byte aligned. The reductions are shuffles inside a warp
//   (plus one exchange through shared memory for a block); statistics are fp32.
//   * 8192 < len ≤ 131072 on Hopper (thread-block clusters): the row is split over a cluster of
//     c = ⌈len / 8192⌉ ≤ 16 blocks of 256 threads (more than 8 only where the GPU can schedule
//     such a cluster), block r keeping the slice [r·chunk, (r+1)·chunk)
//     in registers as above. Each block reduces its slice to a pair (m_r, s_r), with
//     s_r = Σ exp(x − m_r) over the slice; the pairs meet in distributed shared memory (a block
//     reads its partners' shared memory directly, after one cluster barrier), and every block
//     combines them in rank order: M = max_r m_r, S = Σ_r s_r·exp(m_r − M). Again one read and one
//     write of memory, and one barrier per row. On an H200 (docs/PERFORMANCE.md, 2026-11-27) the
//     clusters reach 88 % of copy bandwidth at 16k and 82 % at 32k, where the shared-memory kernel
//     below gave 86 % and 57 % (a 128 KB row leaves room for one block per SM).
//   * len > 8192 elsewhere (GPUs before Hopper, longer rows, a cluster the GPU cannot schedule),
//     while the row fits in shared memory (227 KB a block on Hopper: 56k floats forward; y and dy
//     together, 28k, backward): a block of 512 threads per row, each thread
//     parking the elements it reads in shared memory as it goes. Pass 1 keeps a running (max, sum)
//     per thread — when a new element x exceeds the running max m, the sum is rescaled:
//     s ← s·exp(m − x) — and the block combines them: M = max of the threads' m,
//     S = Σ s·exp(m − M). Pass 2 reads the parked copy and writes y: again one read and one write
//     of memory. Every thread reads back only the slots it wrote itself, so the parking needs no
//     barrier; shared memory is here just a larger register file.
//   * longer rows: the same two passes, the second re-reading the row from memory. The grid is
//     capped so that the rows in flight fit in half the L2 cache (but at least one block per SM):
//     pass 2 then reads from L2, when it does, not from memory.
// Algorithm, inner > 1 (a row is strided by `inner`): one thread per (outer, inner) column,
// neighboring threads on neighboring columns, so every step along the axis is a coalesced
// read; pass 1 online (max, sum), pass 2 writes. (Few columns along a very long axis leave most
// of the GPU idle.)
//
// A row of all −inf has m = −inf and s = 0; we then shift by 0 and use 1/s := 0 and log s := 0,
// which gives softmax 0 and log-softmax −inf without NaN, as the CPU kernel does.
//
// The API is softmax.h; engine/ops/cuda/softmax.cu adapts the ops to it.
#include "kernels/cuda/softmax.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/rows.cuh"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr float kNegInf = -INFINITY;
constexpr int64_t kMaxRegisterRow = 8192; // floats: longer rows take the two-pass kernel
constexpr int kLongRowThreads = 512;      // the shared-memory and the two-pass kernels
constexpr int kColumnThreads = 256;

// ---- rows held in registers ----------------------------------------------------------------------

template <class L>
__global__ void __launch_bounds__(L::kBlock)
    forward_rows_kernel(int64_t rows, int len, const float* x, float* y, bool log) {
  __shared__ float scratch[32];
  for_each_team_row<L>(rows, len, [&](int64_t row, int n, int t) {
    float v[L::kPerThread];
    load_share<L>(x + row * len, n, t, v, kNegInf); // padding −inf: no effect on the max, exp → 0
    float m = kNegInf;
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) m = fmaxf(m, v[j]);
    m = team_reduce<L::kTeam>(m, Max{}, scratch);
    const float shift = m == kNegInf ? 0.0f : m;
    float s = 0.0f;
    if (log) {
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) s += expf(v[j] - shift);
      s = team_reduce<L::kTeam>(s, Sum{}, scratch);
      const float log_sum = s > 0.0f ? logf(s) : 0.0f;
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) v[j] = v[j] - shift - log_sum;
    } else {
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) {
        v[j] = expf(v[j] - shift);
        s += v[j];
      }
      s = team_reduce<L::kTeam>(s, Sum{}, scratch);
      const float inv_sum = s > 0.0f ? 1.0f / s : 0.0f;
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) v[j] *= inv_sum;
    }
    store_share<L>(y + row * len, n, t, v);
  });
}

template <class L>
__global__ void __launch_bounds__(L::kBlock)
    backward_rows_kernel(int64_t rows, int len, const float* y, const float* dy, float* dx, bool log) {
  __shared__ float scratch[32];
  for_each_team_row<L>(rows, len, [&](int64_t row, int n, int t) {
    float yv[L::kPerThread], g[L::kPerThread];
    load_share<L>(y + row * len, n, t, yv, 0.0f); // padding 0: adds nothing to the dot product
    load_share<L>(dy + row * len, n, t, g, 0.0f);
    float dot = 0.0f; // Σ g (log-softmax) or Σ g·y (softmax)
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) dot += log ? g[j] : g[j] * yv[j];
    dot = team_reduce<L::kTeam>(dot, Sum{}, scratch);
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) g[j] = log ? g[j] - expf(yv[j]) * dot : yv[j] * (g[j] - dot);
    store_share<L>(dx + row * len, n, t, g);
  });
}

// Calls f(L{}) with the smallest register layout whose capacity is at least len floats
// (len ≤ kMaxRegisterRow): teams of 1, 2, 4, .. 32 lanes with one unit each, then a full warp with
// 2, 4, .. units (≤ 32 floats per lane), then a 256-thread block with 8 .. 32 floats per thread.
template <bool kVec4, int kTeam = 1, int kUnits = 1, class F>
void with_register_layout(int64_t len, F&& f) {
  using L = RowLayout<kTeam, kUnits, kVec4>;
  constexpr int kMaxUnits = 32 / L::kUnitFloats;
  if (len <= L::kCapacity) {
    f(L{});
  } else if constexpr (kTeam < 32) {
    with_register_layout<kVec4, kTeam * 2, kUnits>(len, f);
  } else if constexpr (kTeam == 32 && kUnits < kMaxUnits) {
    with_register_layout<kVec4, 32, kUnits * 2>(len, f);
  } else if constexpr (kTeam == 32) {
    with_register_layout<kVec4, 256, kMaxUnits / 4>(len, f);
  } else if constexpr (kUnits < kMaxUnits) {
    with_register_layout<kVec4, 256, kUnits * 2>(len, f);
  }
  static_assert(RowLayout<256, kMaxUnits, kVec4>::kCapacity == kMaxRegisterRow);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Blocks for the two-pass kernels over `rows` rows of which each block streams `bytes_per_row`
// bytes twice: as many rows at once as fit in half the L2 cache, but at least one block per SM.
unsigned long_row_grid(int64_t rows, int64_t bytes_per_row) {
  const cudaDeviceProp& prop = device_properties();
  const int64_t fit = static_cast<int64_t>(prop.l2CacheSize) / 2 / bytes_per_row;
  const int64_t blocks = std::max<int64_t>(fit, prop.multiProcessorCount);
  return static_cast<unsigned>(std::min<int64_t>({blocks, rows, INT_MAX}));
}

template <bool kVec4>
void forward_in_registers(int64_t rows, int len, const float* x, float* y, bool log) {
  with_register_layout<kVec4>(len, [&](auto layout) {
    using L = decltype(layout);
    forward_rows_kernel<L><<<blocks_for(rows, L::kTeamsPerBlock), L::kBlock, 0, stream()>>>(rows, len, x, y, log);
    PILLARS_CUDA_LAUNCHED("softmax forward_rows_kernel");
  });
}

template <bool kVec4>
void backward_in_registers(int64_t rows, int len, const float* y, const float* dy, float* dx, bool log) {
  with_register_layout<kVec4>(len, [&](auto layout) {
    using L = decltype(layout);
    backward_rows_kernel<L><<<blocks_for(rows, L::kTeamsPerBlock), L::kBlock, 0, stream()>>>(rows, len, y, dy, dx, log);
    PILLARS_CUDA_LAUNCHED("softmax backward_rows_kernel");
  });
}

// ---- long rows: two passes over memory -----------------------------------------------------------

__device__ __forceinline__ void online_add(float& m, float& s, float v) {
  if (v > m) {
    s *= expf(m - v); // (m = −inf: s is 0 and stays 0)
    m = v;
  }
  s += m == kNegInf ? 0.0f : expf(v - m); // (m = −inf means v = −inf too: exp would be NaN)
}

struct RowStats {
  float shift, inv_sum, log_sum;
};

// Combines the block's running pairs into the row's statistics (see the file comment).
template <int kThreads>
__device__ RowStats block_row_stats(float m, float s, float* scratch) {
  const float row_max = team_reduce<kThreads>(m, Max{}, scratch);
  const float rescaled = m == kNegInf ? 0.0f : s * expf(m - row_max);
  const float sum = team_reduce<kThreads>(rescaled, Sum{}, scratch);
  return RowStats{row_max == kNegInf ? 0.0f : row_max, sum > 0.0f ? 1.0f / sum : 0.0f, sum > 0.0f ? logf(sum) : 0.0f};
}

// out[i] = op(a[i]) and out[i] = op(a[i], b[i]) over the elements a kThreads-thread block's thread
// owns (16-byte units with kVec4); Σ op(a[i], b[i]) likewise. Softmax never runs in place, so the
// pointers are __restrict__ and the unrolled iterations' loads can be in flight together.
template <int kThreads, bool kVec4, class Op>
__device__ void map_owned(const float* __restrict__ a, float* __restrict__ out, int64_t n, Op op) {
  if constexpr (kVec4) {
#pragma unroll 4
    for (int64_t u = threadIdx.x; u < n / 4; u += kThreads) {
      const float4 p = reinterpret_cast<const float4*>(a)[u];
      reinterpret_cast<float4*>(out)[u] = make_float4(op(p.x), op(p.y), op(p.z), op(p.w));
    }
  } else {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < n; i += kThreads) out[i] = op(a[i]);
  }
}

template <int kThreads, bool kVec4, class Op>
__device__ void map_owned(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int64_t n,
                          Op op) {
  if constexpr (kVec4) {
#pragma unroll 4
    for (int64_t u = threadIdx.x; u < n / 4; u += kThreads) {
      const float4 p = reinterpret_cast<const float4*>(a)[u], q = reinterpret_cast<const float4*>(b)[u];
      reinterpret_cast<float4*>(out)[u] = make_float4(op(p.x, q.x), op(p.y, q.y), op(p.z, q.z), op(p.w, q.w));
    }
  } else {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < n; i += kThreads) out[i] = op(a[i], b[i]);
  }
}

template <int kThreads, bool kVec4, class Op>
__device__ float sum_owned(const float* __restrict__ a, const float* __restrict__ b, int64_t n, Op op) {
  float acc = 0.0f;
  if constexpr (kVec4) {
#pragma unroll 4
    for (int64_t u = threadIdx.x; u < n / 4; u += kThreads) {
      const float4 p = reinterpret_cast<const float4*>(a)[u], q = reinterpret_cast<const float4*>(b)[u];
      acc += op(p.x, q.x) + op(p.y, q.y) + op(p.z, q.z) + op(p.w, q.w);
    }
  } else {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += op(a[i], b[i]);
  }
  return acc;
}

// The dynamic shared memory a parking kernel may have on this device: the most a block may ask for
// (above 48 KB it must be asked for), less 1 KB for the kernels' own static scratch.
size_t shared_bytes_per_block() { return device_properties().sharedMemPerBlockOptin - 1024; }

// kParked: the first pass parks the row in shared memory and the second reads it from there (one
// read of memory); otherwise the second pass reads the row again. Each thread parks and reads back
// the same elements (for_each_owned's and map_owned's ownership agree), so parking needs no barrier.
template <bool kVec4, bool kParked>
__global__ void __launch_bounds__(kLongRowThreads)
    forward_long_rows_kernel(int64_t rows, int64_t len, const float* __restrict__ x, float* __restrict__ y, bool log) {
  extern __shared__ float4 park4[]; // kParked: (len) floats, this block's row
  float* park = reinterpret_cast<float*>(park4);
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * len;
    float m = kNegInf, s = 0.0f;
    for_each_owned<kLongRowThreads, kVec4>(xr, len, threadIdx.x, [&](int64_t i, float v) {
      if constexpr (kParked) park[i] = v;
      online_add(m, s, v);
    });
    const RowStats st = block_row_stats<kLongRowThreads>(m, s, scratch);
    const float* again = kParked ? park : xr; // what the second pass reads
    if (log)
      map_owned<kLongRowThreads, kVec4>(again, y + row * len, len, [&](float v) { return v - st.shift - st.log_sum; });
    else
      map_owned<kLongRowThreads, kVec4>(again, y + row * len, len,
                                        [&](float v) { return expf(v - st.shift) * st.inv_sum; });
  }
}

template <bool kVec4, bool kParked>
__global__ void __launch_bounds__(kLongRowThreads)
    backward_long_rows_kernel(int64_t rows, int64_t len, const float* __restrict__ y, const float* __restrict__ dy,
                              float* __restrict__ dx, bool log) {
  extern __shared__ float4 park4[]; // kParked: (2, len) floats, this block's y then its dy
  float* park_y = reinterpret_cast<float*>(park4);
  float* park_g = park_y + len; // (len % 4 == 0 with kVec4: stays 16-byte aligned)
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *ya = y + row * len, *ga = dy + row * len; // what the second pass reads
    float dot = 0.0f;                                      // Σ g (log-softmax) or Σ g·y (softmax)
    if constexpr (kParked) {
      for_each_owned<kLongRowThreads, kVec4>(ya, len, threadIdx.x, [&](int64_t i, float yi) { park_y[i] = yi; });
      for_each_owned<kLongRowThreads, kVec4>(ga, len, threadIdx.x, [&](int64_t i, float g) {
        park_g[i] = g;
        dot += log ? g : g * park_y[i];
      });
      ya = park_y, ga = park_g;
    } else {
      dot = sum_owned<kLongRowThreads, kVec4>(ya, ga, len, [log](float yi, float g) { return log ? g : g * yi; });
    }
    dot = team_reduce<kLongRowThreads>(dot, Sum{}, scratch);
    float* dxr = dx + row * len;
    if (log)
      map_owned<kLongRowThreads, kVec4>(ya, ga, dxr, len, [&](float yi, float g) { return g - expf(yi) * dot; });
    else
      map_owned<kLongRowThreads, kVec4>(ya, ga, dxr, len, [&](float yi, float g) { return yi * (g - dot); });
  }
}

// Launches a long-row kernel on `grid` blocks with `bytes` of dynamic shared memory (0 for the
// two-pass kernels), having raised its limit to the device's maximum the first time.
template <auto Kernel, class... Args>
void launch_long(unsigned grid, size_t bytes, const char* name, Args... args) {
  static const bool configured = [] {
    PILLARS_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared_bytes_per_block())));
    return true;
  }();
  (void)configured;
  Kernel<<<grid, kLongRowThreads, bytes, stream()>>>(args...);
  PILLARS_CUDA_LAUNCHED(name);
}

// ---- rows split over a thread-block cluster (Hopper) ---------------------------------------------

constexpr int kPortableClusterBlocks = 8;     // every Hopper GPU schedules clusters this large
constexpr int kMaxClusterBlocks = 16;         // larger clusters must be allowed per kernel, and may not fit
using SliceLayout4 = RowLayout<256, 8, true>; // a block's slice: 256 threads × 32 floats
using SliceLayout1 = RowLayout<256, 32, false>;
static_assert(SliceLayout4::kCapacity == kMaxRegisterRow && SliceLayout1::kCapacity == kMaxRegisterRow);

// The cluster kernels' bodies are compiled for sm_90 and later only (a build for 80 has empty ones,
// never launched: clusters_available()).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PILLARS_SOFTMAX_CLUSTERS 1
#endif

#ifdef PILLARS_SOFTMAX_CLUSTERS
// The slice of a row that block `rank` of a cluster keeps: [begin, begin + n), n ≤ chunk (the last
// block's may be shorter, or empty).
struct Slice {
  int64_t begin;
  int n;
};
__device__ inline Slice slice_of(int64_t len, int chunk, int rank) {
  const int64_t begin = int64_t{rank} * chunk, left = len - begin;
  return Slice{begin, left <= 0 ? 0 : left < chunk ? static_cast<int>(left) : chunk};
}

// Where a block of a cluster kernel stands: its cluster's number of `blocks`, its own slice of
// every row, and the rows its cluster walks (first_row, then every row_step-th).
struct ClusterPlace {
  int blocks;
  Slice slice;
  int64_t first_row, row_step;
};
__device__ inline ClusterPlace cluster_place(const cooperative_groups::cluster_group& cluster, int64_t len, int chunk) {
  const int blocks = static_cast<int>(cluster.num_blocks());
  return ClusterPlace{blocks, slice_of(len, chunk, static_cast<int>(cluster.block_rank())), blockIdx.x / blocks,
                      gridDim.x / blocks};
}
#endif

// Each cluster walks the rows rank by rank: row = cluster index, + number of clusters, ... . The
// blocks publish one value per row in shared memory, double-buffered by the row's parity: a block
// may write row k+1's value while a partner still reads row k's, and it cannot reach row k+2's
// write before every partner has passed row k+1's barrier, i.e. has finished reading row k's.
// Forward: the pair (m_r, s_r) of the file comment. Backward: the slice's part of the dot product.

template <bool kVec4>
__global__ void __launch_bounds__(256)
    forward_cluster_rows_kernel(int64_t rows, int64_t len, int chunk, const float* __restrict__ x,
                                float* __restrict__ y, bool log) {
#ifdef PILLARS_SOFTMAX_CLUSTERS
  using L = std::conditional_t<kVec4, SliceLayout4, SliceLayout1>;
  namespace cg = cooperative_groups;
  __shared__ float scratch[32];
  __shared__ float2 published[2]; // this block's (m_r, s_r), by row parity
  const cg::cluster_group cluster = cg::this_cluster();
  const ClusterPlace at = cluster_place(cluster, len, chunk);
  int parity = 0;
  for (int64_t row = at.first_row; row < rows; row += at.row_step, parity ^= 1) {
    float v[L::kPerThread];
    load_share<L>(x + row * len + at.slice.begin, at.slice.n, threadIdx.x, v, kNegInf);
    float m = kNegInf;
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) m = fmaxf(m, v[j]);
    m = team_reduce<256>(m, Max{}, scratch);
    const float shift = m == kNegInf ? 0.0f : m;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) {
      const float e = expf(v[j] - shift);
      s += e;
      if (!log) v[j] = e; // softmax keeps exp(x − m_r); log-softmax keeps x
    }
    s = team_reduce<256>(s, Sum{}, scratch);
    if (threadIdx.x == 0) published[parity] = make_float2(m, s);
    cluster.sync();
    // Every thread combines the cluster's pairs in rank order (the same bits in every block),
    // online: a larger m_r rescales the sum so far, S ← S·exp(M − m_r).
    float M = kNegInf, S = 0.0f;
    for (int r = 0; r < at.blocks; ++r) {
      const float2 pair = *cluster.map_shared_rank(&published[parity], r);
      if (pair.y == 0.0f) continue; // an all −inf (or empty) slice; a NaN sum is kept, so NaN spreads
      if (pair.x > M) {
        S *= expf(M - pair.x); // (M = −inf: S is 0 and exp gives 0)
        M = pair.x;
      }
      S += pair.y * expf(pair.x - M);
    }
    const float row_shift = M == kNegInf ? 0.0f : M;
    if (log) {
      const float log_sum = S > 0.0f ? logf(S) : 0.0f;
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) v[j] = v[j] - row_shift - log_sum;
    } else {
      // y = exp(x − m_r) · exp(m_r − M) / S
      const float scale = S > 0.0f && m != kNegInf ? expf(m - row_shift) / S : 0.0f;
#pragma unroll
      for (int j = 0; j < L::kPerThread; ++j) v[j] *= scale;
    }
    store_share<L>(y + row * len + at.slice.begin, at.slice.n, threadIdx.x, v);
  }
  cluster.sync(); // no block may leave while a partner can still read its shared memory
#endif
}

template <bool kVec4>
__global__ void __launch_bounds__(256)
    backward_cluster_rows_kernel(int64_t rows, int64_t len, int chunk, const float* __restrict__ y,
                                 const float* __restrict__ dy, float* __restrict__ dx, bool log) {
#ifdef PILLARS_SOFTMAX_CLUSTERS
  using L = std::conditional_t<kVec4, SliceLayout4, SliceLayout1>;
  namespace cg = cooperative_groups;
  __shared__ float scratch[32];
  __shared__ float published[2]; // this block's part of the dot product, by row parity
  const cg::cluster_group cluster = cg::this_cluster();
  const ClusterPlace at = cluster_place(cluster, len, chunk);
  int parity = 0;
  for (int64_t row = at.first_row; row < rows; row += at.row_step, parity ^= 1) {
    float yv[L::kPerThread], g[L::kPerThread];
    load_share<L>(y + row * len + at.slice.begin, at.slice.n, threadIdx.x, yv, 0.0f); // padding 0: adds nothing
    load_share<L>(dy + row * len + at.slice.begin, at.slice.n, threadIdx.x, g, 0.0f);
    float dot = 0.0f; // Σ g (log-softmax) or Σ g·y (softmax) over the slice
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) dot += log ? g[j] : g[j] * yv[j];
    dot = team_reduce<256>(dot, Sum{}, scratch);
    if (threadIdx.x == 0) published[parity] = dot;
    cluster.sync();
    float total = 0.0f; // over the whole row, in rank order
    for (int r = 0; r < at.blocks; ++r) total += *cluster.map_shared_rank(&published[parity], r);
#pragma unroll
    for (int j = 0; j < L::kPerThread; ++j) g[j] = log ? g[j] - expf(yv[j]) * total : yv[j] * (g[j] - total);
    store_share<L>(dx + row * len + at.slice.begin, at.slice.n, threadIdx.x, g);
  }
  cluster.sync();
#endif
}

bool g_use_clusters = true;
int64_t g_cluster_launches = 0; // (the backend's one stream thread launches)

// Whether this device and this build can run the cluster kernels: a Hopper GPU (or newer) running
// code compiled for sm_90 or later. The PTX version is what tells: code the driver compiles at run
// time from compute_80 PTX (a build for 80 only on a Hopper GPU, or a build for 80 and 90a on a
// later GPU, where sm_90a code cannot load) reports the GPU's binary version but has the empty
// bodies of the sm_80 pass.
bool clusters_available() {
  static const bool available = [] {
    if (device_properties().major < 9) return false;
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, forward_cluster_rows_kernel<true>) != cudaSuccess) {
      cudaGetLastError(); // not an error of anything launched later
      return false;
    }
    return attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
  }();
  return available;
}

// Launches a cluster kernel over `rows` rows of `len` floats (kMaxRegisterRow < len ≤
// kMaxClusterBlocks · kMaxRegisterRow): clusters of ⌈len / 8192⌉ blocks, each block a slice of
// `chunk` floats (a multiple of 4, so every slice stays 16-byte aligned), as many clusters as keep
// about four blocks on every SM (each cluster then walks several rows). Clusters of more than 8
// blocks are "non-portable": the kernel must allow them, and the GPU may not be able to schedule
// one (CUDA's occupancy query says); then nothing is launched and the answer is false, and the
// caller runs the kernels every GPU has.
template <auto Kernel, class... Args>
bool launch_clusters(int64_t rows, int64_t len, const char* name, Args... args) {
  static_assert(kMaxRegisterRow == 8192, "softmax_cluster_split (softmax.h) slices rows for 8192-float blocks");
  const auto [blocks, chunk] = softmax_cluster_split(len);
  const int64_t clusters =
      std::min<int64_t>(rows, std::max<int64_t>(1, 4 * device_properties().multiProcessorCount / blocks));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * blocks));
  config.blockDim = dim3(256);
  config.stream = stream();
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(blocks);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (blocks > kPortableClusterBlocks) {
    // Per cluster size: 0 not asked yet, 1 schedulable, −1 not (asked once per kernel and size).
    static signed char schedulable[kMaxClusterBlocks + 1] = {};
    if (schedulable[blocks] == 0) {
      int active = 0;
      const bool asked =
          cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess &&
          cudaOccupancyMaxActiveClusters(&active, Kernel, &config) == cudaSuccess;
      if (!asked) cudaGetLastError(); // a refusal is an answer here, not an error of a later launch
      schedulable[blocks] = asked && active > 0 ? 1 : -1;
    }
    if (schedulable[blocks] < 0) return false;
  }
  PILLARS_CUDA_CHECK(cudaLaunchKernelEx(&config, Kernel, rows, len, chunk, args...));
  PILLARS_CUDA_LAUNCHED(name);
  ++g_cluster_launches;
  return true;
}

bool use_clusters(int64_t len) {
  return g_use_clusters && len > kMaxRegisterRow && len <= kMaxClusterBlocks * kMaxRegisterRow && clusters_available();
}

// ---- strided rows (inner > 1): a thread per column -----------------------------------------------

__global__ void __launch_bounds__(kColumnThreads)
    forward_columns_kernel(int64_t outer, int64_t len, int64_t inner, const float* x, float* y, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = int64_t{blockIdx.x} * kColumnThreads + threadIdx.x; c < columns;
       c += int64_t{gridDim.x} * kColumnThreads) {
    const int64_t base = (c / inner) * len * inner + c % inner; // element (o, 0, i)
    float m = kNegInf, s = 0.0f;
#pragma unroll 4
    for (int64_t l = 0; l < len; ++l) online_add(m, s, x[base + l * inner]);
    const float shift = m == kNegInf ? 0.0f : m;
    const float inv_sum = s > 0.0f ? 1.0f / s : 0.0f, log_sum = s > 0.0f ? logf(s) : 0.0f;
#pragma unroll 4
    for (int64_t l = 0; l < len; ++l) {
      const float v = x[base + l * inner] - shift;
      y[base + l * inner] = log ? v - log_sum : expf(v) * inv_sum;
    }
  }
}

__global__ void __launch_bounds__(kColumnThreads)
    backward_columns_kernel(int64_t outer, int64_t len, int64_t inner, const float* y, const float* dy, float* dx,
                            bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = int64_t{blockIdx.x} * kColumnThreads + threadIdx.x; c < columns;
       c += int64_t{gridDim.x} * kColumnThreads) {
    const int64_t base = (c / inner) * len * inner + c % inner;
    float dot = 0.0f;
#pragma unroll 4
    for (int64_t l = 0; l < len; ++l) dot += log ? dy[base + l * inner] : dy[base + l * inner] * y[base + l * inner];
#pragma unroll 4
    for (int64_t l = 0; l < len; ++l) {
      const int64_t k = base + l * inner;
      const float yk = y[k], g = dy[k];
      dx[k] = log ? g - expf(yk) * dot : yk * (g - dot);
    }
  }
}

} // namespace

bool set_softmax_clusters(bool on) {
  const bool before = g_use_clusters;
  g_use_clusters = on;
  return before;
}

bool softmax_clusters_available() { return clusters_available(); }

int64_t softmax_cluster_launches() { return g_cluster_launches; }

void softmax_forward(const SoftmaxArgs& a, const float* x, float* y) {
  const int64_t outer = a.outer, len = a.len, inner = a.inner;
  const bool log = a.log;
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  if (inner > 1) {
    forward_columns_kernel<<<blocks_for(outer * inner, kColumnThreads), kColumnThreads, 0, stream()>>>(
        outer, len, inner, x, y, log);
    PILLARS_CUDA_LAUNCHED("softmax forward_columns_kernel");
    return;
  }
  const bool vec4 = len % 4 == 0 && aligned16(x) && aligned16(y);
  if (len <= kMaxRegisterRow) {
    if (vec4)
      forward_in_registers<true>(outer, static_cast<int>(len), x, y, log);
    else
      forward_in_registers<false>(outer, static_cast<int>(len), x, y, log);
    return;
  }
  if (use_clusters(len)) {
    const char* name = "softmax forward_cluster_rows_kernel";
    if (vec4 ? launch_clusters<forward_cluster_rows_kernel<true>>(outer, len, name, x, y, log)
             : launch_clusters<forward_cluster_rows_kernel<false>>(outer, len, name, x, y, log))
      return;
  }
  const size_t parked = static_cast<size_t>(len) * sizeof(float);
  const char* name = "softmax forward_long_rows_kernel";
  if (parked <= shared_bytes_per_block()) { // one block per row, the row parked in shared memory
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(outer, INT_MAX));
    if (vec4)
      launch_long<forward_long_rows_kernel<true, true>>(grid, parked, name, outer, len, x, y, log);
    else
      launch_long<forward_long_rows_kernel<false, true>>(grid, parked, name, outer, len, x, y, log);
    return;
  }
  const unsigned grid = long_row_grid(outer, len * static_cast<int64_t>(sizeof(float)));
  if (vec4)
    launch_long<forward_long_rows_kernel<true, false>>(grid, 0, name, outer, len, x, y, log);
  else
    launch_long<forward_long_rows_kernel<false, false>>(grid, 0, name, outer, len, x, y, log);
}

void softmax_backward(const SoftmaxArgs& a, const float* y, const float* dy, float* dx) {
  const int64_t outer = a.outer, len = a.len, inner = a.inner;
  const bool log = a.log;
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  if (inner > 1) {
    backward_columns_kernel<<<blocks_for(outer * inner, kColumnThreads), kColumnThreads, 0, stream()>>>(
        outer, len, inner, y, dy, dx, log);
    PILLARS_CUDA_LAUNCHED("softmax backward_columns_kernel");
    return;
  }
  const bool vec4 = len % 4 == 0 && aligned16(y) && aligned16(dy) && aligned16(dx);
  if (len <= kMaxRegisterRow) {
    if (vec4)
      backward_in_registers<true>(outer, static_cast<int>(len), y, dy, dx, log);
    else
      backward_in_registers<false>(outer, static_cast<int>(len), y, dy, dx, log);
    return;
  }
  if (use_clusters(len)) {
    const char* name = "softmax backward_cluster_rows_kernel";
    if (vec4 ? launch_clusters<backward_cluster_rows_kernel<true>>(outer, len, name, y, dy, dx, log)
             : launch_clusters<backward_cluster_rows_kernel<false>>(outer, len, name, y, dy, dx, log))
      return;
  }
  const size_t parked = 2 * static_cast<size_t>(len) * sizeof(float); // y and dy
  const char* name = "softmax backward_long_rows_kernel";
  if (parked <= shared_bytes_per_block()) {
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(outer, INT_MAX));
    if (vec4)
      launch_long<backward_long_rows_kernel<true, true>>(grid, parked, name, outer, len, y, dy, dx, log);
    else
      launch_long<backward_long_rows_kernel<false, true>>(grid, parked, name, outer, len, y, dy, dx, log);
    return;
  }
  const unsigned grid = long_row_grid(outer, 2 * len * static_cast<int64_t>(sizeof(float))); // y and dy
  if (vec4)
    launch_long<backward_long_rows_kernel<true, false>>(grid, 0, name, outer, len, y, dy, dx, log);
  else
    launch_long<backward_long_rows_kernel<false, false>>(grid, 0, name, outer, len, y, dy, dx, log);
}

} // namespace pillars::cuda
