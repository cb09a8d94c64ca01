// The building blocks of the tensor-core attention kernels (attention_tensor_core.cu): inline PTX
// for mma.sync m16n8k16 (bf16 → fp32), ldmatrix and cp.async; shared-memory tiles of D bf16 per
// row padded by 16 bytes; the warp-level tile products S = Q Kᵀ and Õ += P V built from them; the
// per-warp row bookkeeping; the mask of a tile. Fragment layouts are described at the top of
// attention_tensor_core.cu. For nvcc only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cuda/attention_internal.h"

namespace pillars::cuda::attention_detail {
namespace {

using bf16 = __nv_bfloat16;

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- PTX ---------------------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8 × 8 bf16 matrices; lanes 8m..8m+7 give the row addresses of matrix m, register m receives it.
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c (16 × 8, fp32) += a (16 × 16, bf16) · b (16 × 8, bf16)
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes global → shared without passing through registers (completes at cp_async_wait_all).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// 2^x in one MUFU instruction (inputs are ≤ 0 up to rounding; −∞ gives 0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats as a bf16 pair, `lo` in the low half (the lower column index of a fragment).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

__device__ __forceinline__ void store_pair(float* dst, float a, float b) {
  *reinterpret_cast<float2*>(dst) = make_float2(a, b);
}
__device__ __forceinline__ void store_pair(bf16* dst, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(a, b);
}

// ---- shared-memory tiles ----------------------------------------------------------------------------

// A tile row: D bf16 plus 8 of padding (16 bytes), so that consecutive rows start on different
// 16-byte bank groups and ldmatrix's 8 row reads never collide.
template <int D>
struct Row {
  static constexpr int LD = D + 8;      // elements
  static constexpr int kBytes = LD * 2; // bytes
};

// tile (R rows) ← rows [row0, row0 + R) of the head starting at X + base (rows `stride` apart);
// rows ≥ T are zero and never read (keys and values pass T = the batch row's key limit, so a padding
// slot's NaN cannot reach a product: 0 · NaN is NaN even where the probability is masked to 0);
// NT threads share the work. bf16: 16-byte cp.async copies; float: loaded,
// rounded, stored.
template <int D, int R, int NT>
__device__ void stage_rows(bf16* tile, const bf16* X, int64_t base, int64_t stride, int row0, int T) {
  constexpr int kPerRow = D / 8; // 16-byte chunks per row
  for (int c = threadIdx.x; c < R * kPerRow; c += NT) {
    const int r = c / kPerRow, k = c % kPerRow;
    bf16* dst = tile + r * Row<D>::LD + 8 * k;
    if (row0 + r < T)
      cp_async_16(smem_u32(dst), X + base + (row0 + r) * stride + 8 * k);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
}
template <int D, int R, int NT>
__device__ void stage_rows(bf16* tile, const float* X, int64_t base, int64_t stride, int row0, int T) {
  constexpr int kPerRow = D / 8;
  for (int c = threadIdx.x; c < R * kPerRow; c += NT) {
    const int r = c / kPerRow, k = c % kPerRow;
    uint4 packed = make_uint4(0, 0, 0, 0);
    if (row0 + r < T) {
      const float4* src = reinterpret_cast<const float4*>(X + base + (row0 + r) * stride + 8 * k);
      const float4 x = src[0], y = src[1];
      packed = make_uint4(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w), pack_bf16(y.x, y.y), pack_bf16(y.z, y.w));
    }
    *reinterpret_cast<uint4*>(tile + r * Row<D>::LD + 8 * k) = packed;
  }
}

// ---- warp-level products ------------------------------------------------------------------------------

// This lane's ldmatrix address offset (bytes) inside a tile with rows of RB bytes:
//   offset_a:  matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15,
//              cols 8-15) — an A fragment, or with .trans the B fragments of two n-tiles from a
//              row-major (k × n) tile;
//   offset_bt: matrices (rows 0-7, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 0-7), (rows 8-15,
//              cols 8-15) — the B fragments of two n-tiles from an (n × k) tile (B transposed).
template <int RB>
__device__ __forceinline__ uint32_t offset_a(int lane) {
  const int m = lane / 8;
  return ((m & 1) * 8 + lane % 8) * RB + (m >> 1) * 16;
}
template <int RB>
__device__ __forceinline__ uint32_t offset_bt(int lane) {
  const int m = lane / 8;
  return ((m >> 1) * 8 + lane % 8) * RB + (m & 1) * 16;
}

// The A fragments of a (16 × 16·KS) tile at `a` (this lane's address, offset_a).
template <int KS>
__device__ __forceinline__ void load_a(uint32_t (&frag)[KS][4], uint32_t a) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) ldsm_x4(a + 32 * ks, frag[ks]);
}

// The products below work on MT m-tiles (16 rows each) at once, which share every B fragment:
// one ldmatrix.x4 of B feeds 2·MT mma instructions.

// acc[mt] (16 × 8·NT) += A[mt] (16 × 16·KS) · Bᵀ, with A's fragments in registers and B (8·NT rows
// of 16·KS) in shared memory at `b` (this lane's address, offset_bt).
template <int MT, int NT, int KS, int RB>
__device__ __forceinline__ void mma_abt(float (&acc)[MT][NT][4], const uint32_t (&a)[MT][KS][4], uint32_t b) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t f[4];
      ldsm_x4(b + np * 16 * RB + 32 * ks, f);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816(acc[mt][2 * np], a[mt][ks], f[0], f[1]);
        mma_16816(acc[mt][2 * np + 1], a[mt][ks], f[2], f[3]);
      }
    }
}

// The same with A also in shared memory: m-tile mt's 16 rows at a + 16·mt·RB (offset_a).
template <int MT, int NT, int KS, int RB>
__device__ __forceinline__ void mma_abt_smem(float (&acc)[MT][NT][4], uint32_t a, uint32_t b) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    uint32_t af[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) ldsm_x4(a + mt * 16 * RB + 32 * ks, af[mt]);
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t f[4];
      ldsm_x4(b + np * 16 * RB + 32 * ks, f);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816(acc[mt][2 * np], af[mt], f[0], f[1]);
        mma_16816(acc[mt][2 * np + 1], af[mt], f[2], f[3]);
      }
    }
  }
}

// acc[mt] (16 × 8·NT) += A[mt] (16 × 16·KS) · B, A's fragments in registers, B (16·KS rows of 8·NT)
// row-major in shared memory at `b` (offset_a), read with ldmatrix.trans.
template <int MT, int NT, int KS, int RB>
__device__ __forceinline__ void mma_ab(float (&acc)[MT][NT][4], const uint32_t (&a)[MT][KS][4], uint32_t b) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t f[4];
      ldsm_x4_trans(b + ks * 16 * RB + 32 * np, f);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816(acc[mt][2 * np], a[mt][ks], f[0], f[1]);
        mma_16816(acc[mt][2 * np + 1], a[mt][ks], f[2], f[3]);
      }
    }
}

// A single m-tile's arrays seen as MT = 1 arrays (same layout), for the products above.
template <class X, int N, int M>
using OneTile = X[1][N][M];
template <class X, int N, int M>
__device__ __forceinline__ OneTile<X, N, M>& one(X (&x)[N][M]) {
  return reinterpret_cast<OneTile<X, N, M>&>(x);
}

// The accumulators of a (16 × 16·KS) product as the bf16 A operand of the next one (k = its columns).
template <int KS>
__device__ __forceinline__ void to_a(const float (&c)[2 * KS][4], uint32_t (&a)[KS][4]) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    a[ks][0] = pack_bf16(c[2 * ks][0], c[2 * ks][1]);
    a[ks][1] = pack_bf16(c[2 * ks][2], c[2 * ks][3]);
    a[ks][2] = pack_bf16(c[2 * ks + 1][0], c[2 * ks + 1][1]);
    a[ks][3] = pack_bf16(c[2 * ks + 1][2], c[2 * ks + 1][3]);
  }
}

// ---- the rows of a warp --------------------------------------------------------------------------------

// What a warp owning the 16·MT query rows [w0, w0 + 16·MT) needs about them; in m-tile mt this
// thread holds rows w0 + 16·mt + g and w0 + 16·mt + g + 8 (fragment rows g and g + 8).
template <int MT>
struct WarpRows {
  int first;      // w0 + g: this thread's row in fragment row g of m-tile 0
  int vis[MT][2]; // keys its rows see: [0, vis)
  int keys;       // the warp's rows see no key ≥ keys (so tiles from there on are skipped)
  int full;       // every row of the warp sees keys [0, full) (tiles below need no mask)
  __device__ __forceinline__ int row(int mt, int r) const { return first + 16 * mt + 8 * r; }
};

template <int MT>
__device__ __forceinline__ WarpRows<MT> warp_rows(const RowMask& mask, int w0, int g, int Tq) {
  WarpRows<MT> w;
  w.first = w0 + g;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) w.vis[mt][r] = mask.visible(w.row(mt, r));
  w.keys = w0 < Tq ? mask.visible(min(w0 + 16 * MT - 1, Tq - 1)) : 0; // the last valid row sees the most
  w.full = w0 + 16 * MT <= Tq ? mask.visible(w0) : 0;                 // the first row sees the least
  return w;
}

// s[nt][e] ← −∞ where key j0 + 8·nt + 2t + (e & 1) is hidden from this thread's row e / 2.
template <int NT>
__device__ __forceinline__ void mask_tile(float (&s)[NT][4], int j0, int t, const int (&vis)[2]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (j0 + 8 * nt + 2 * t + (e & 1) >= vis[e >> 1]) s[nt][e] = -kInf;
}

// The online-softmax step for one tile of raw logits s (16 rows × 8·NT keys, −∞ where masked): the
// running max m (log2 units) and this thread's part of the running sum l are updated, Õ rescaled,
// and s replaced by P = 2^(c·s − m′).
template <int NT, int NO>
__device__ __forceinline__ void online_softmax(float (&s)[NT][4], float (&m)[2], float (&l)[2], float (&o)[NO][4],
                                               float c) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -kInf;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)); // the 4 threads of a row: lanes 4g..4g+3
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[r], mx * c);           // c > 0: max(c·s) = c·max(s)
    const float m_use = m_new == -kInf ? 0.0f : m_new; // nothing visible yet: P = 0, α = 0, no NaN
    const float alpha = fast_exp2(m[r] - m_use);
    m[r] = m_new;
    l[r] *= alpha;
#pragma unroll
    for (int nt = 0; nt < NO; ++nt) {
      o[nt][2 * r] *= alpha;
      o[nt][2 * r + 1] *= alpha;
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        s[nt][e] = fast_exp2(fmaf(s[nt][e], c, -m_use));
        l[r] += s[nt][e];
      }
  }
}

} // namespace
} // namespace pillars::cuda::attention_detail
