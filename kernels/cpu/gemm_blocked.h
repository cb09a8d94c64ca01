// The inner pieces of the blocked SGEMM (packing, micro-kernel, macro-kernel), written once as
// templates over a small SIMD "vector traits" type and instantiated per ISA by
//   gemm_avx512.cpp  (V = 16 floats in a zmm register)
//   gemm_avx2.cpp    (V =  8 floats in a ymm register)
//   gemm.cpp         (V =  4 floats, GCC vector extension: the portable fallback)
// The driver in gemm.cpp (the cache-blocking loops and the threading) is ISA-independent and calls
// the pieces through a KernelSet table.
//
// The algorithm (Goto & van de Geijn, "Anatomy of high-performance matrix multiplication", 2008;
// the BLIS loop structure). With op(A): (M, K), op(B): (K, N), C: (M, N):
//
//   for jc in N by NC:                                       (driver, gemm.cpp)
//     for pc in K by KC:
//       pack op(B)[pc:pc+kc, jc:jc+nc]  ->  Bp              kc × nc, in NR-wide panels
//       for ic in M by MC:
//         if op(A) = Aᵀ: pack op(A)[ic:ic+mc, pc:pc+kc] -> Ap   mc × kc, in MR-tall panels
//         macro_kernel:                                      (this file)
//           for jr in nc by NR:                              one B panel (kc × NR) stays in L2
//             for ir in mc by MR:                            one A panel (MR × kc) in L1
//                                                            (the mc × kc A block in L2, Bp in L3)
//               micro_kernel: C[ir:ir+MR, jr:jr+NR] = alpha · A_panel · Bp_panel + beta · C
//
// Layouts the micro-kernel reads:
//   Bp: panel q holds cols q·NR .. q·NR+NR-1; inside it, element (k, c) is at  k·NR + c
//       -> for each k the NR values of one row of op(B) are contiguous: NV aligned vector loads.
//       Zero-padded to a whole panel at the right edge of C.
//   A:  the micro-kernel only ever broadcasts single elements of A, so all it needs is each
//       row's run over k to be contiguous. A non-transposed A already is: it is read in place
//       (RowsOfA: MR rows lda apart; a ragged last panel repeats its last row, whose results are
//       then discarded), which saves a full pass over A per NC block — ~15% of the time on
//       shapes with small N. Aᵀ is packed into Ap: panel p holds rows p·MR .. p·MR+MR-1 with
//       element (r, k) at k·MR + r (PackedPanel), zero-padded to a whole panel. (Reading Aᵀ in
//       place measured 15-20% slower: every k then lands on a new row of A, i.e. a new cache
//       line and often a new page.)
// The transposes are absorbed by pack_block: whichever of op(X)'s two indices is contiguous in
// memory, it reads in the order that streams through memory and writes the layout above.
//
// Micro-kernel register tile: MR × NR with NR = NV · (floats per vector). It keeps MR·NV vector
// accumulators in registers; per k it loads NV vectors of B, broadcasts MR scalars of A and issues
// MR·NV FMAs. E.g. AVX-512 6 × 64: 24 accumulators + 4 B vectors + 1 broadcast of 32 zmm registers.
// Tiles at the bottom/right edge of C are computed whole and only their valid m × n part stored.
//
// ODR note: each ISA translation unit includes this header with different compiler flags, so
// everything below with code in it lives in an anonymous namespace (a private copy per TU). Were
// it a normal inline function, the linker would keep one arbitrary copy (perhaps the AVX-512
// one) for every caller, and the baseline path would die with "illegal instruction" on older
// CPUs. For the same reason this header calls nothing from the standard library.
#pragma once
#include <cstdint>

namespace pillars::cpu::gemm {

// One ISA's building blocks plus the cache-block sizes tuned for them. Plain data: safe to share.
struct KernelSet {
  const char* name;
  int mr, nr;     // micro-kernel tile (rows of A, cols of B)
  int mc, kc, nc; // cache blocks: Ap is mc × kc, Bp is kc × nc (mc % mr == 0, nc % nr == 0)
  // A points at op(A)(0, 0) of the block, B at op(B)(0, 0); buffers are 64-byte aligned and hold
  // round_up(mc, mr) · kc and kc · round_up(nc, nr) floats.
  void (*pack_a)(bool trans_a, const float* A, int64_t lda, int64_t mc, int64_t kc, float* Ap);
  void (*pack_b)(bool trans_b, const float* B, int64_t ldb, int64_t kc, int64_t nc, float* Bp);
  // C[0:mc, 0:nc] = alpha · Ap · Bp + beta · C (beta == 0: C is written, never read).
  // A is either packed (a_packed: Ap as pack_a wrote it) or op(A) itself with rows contiguous in
  // k (row i at A + i·lda), which the micro-kernel can broadcast from in place.
  void (*macro_kernel)(int64_t mc, int64_t nc, int64_t kc, float alpha, const float* A, bool a_packed, int64_t lda,
                       const float* Bp, float beta, float* C, int64_t ldc);
};

// nullptr when that ISA was not compiled in (non-x86 builds).
const KernelSet* kernels_avx512();
const KernelSet* kernels_avx2();
const KernelSet* kernels_generic();

namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- packing ---------------------------------------------------------------------------------

// Pack one panel: W lanes (rows of op(A), or columns of op(B)) over kc steps of k,
//   dst[k·W + c] = lane c at step k   for c < w;  0 for w <= c < W.
// lanes_contiguous: lane c at step k is src[k·ld + c]  (each step is a contiguous run of lanes:
//                   a strided copy)
//            else:  lane c at step k is src[c·ld + k]  (each lane is a contiguous run over k: a
//                   transpose, done in kTile-deep tiles so that the W source rows stream while
//                   the tile being written stays in L1)
// (Copying a whole block step by step across all its panels reads memory more sequentially, but
// measured slower in place: the panel-at-a-time order keeps the writes in one 64-byte-aligned
// stream.)
template <int W>
void pack_panel(const float* src, int64_t ld, bool lanes_contiguous, int64_t w, int64_t kc, float* dst) {
  if (lanes_contiguous) {
    for (int64_t k = 0; k < kc; ++k, dst += W) {
      const float* step = src + k * ld;
      if (w == W) {
        for (int c = 0; c < W; ++c) dst[c] = step[c];
      } else {
        for (int c = 0; c < W; ++c) dst[c] = c < w ? step[c] : 0.0f;
      }
    }
    return;
  }
  constexpr int64_t kTile = 8;
  for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
    const int64_t kt = min_i64(kTile, kc - k0);
    float* d = dst + k0 * W;
    for (int64_t c = 0; c < w; ++c) {
      const float* lane = src + c * ld + k0;
      for (int64_t k = 0; k < kt; ++k) d[k * W + c] = lane[k];
    }
    for (int64_t c = w; c < W; ++c)
      for (int64_t k = 0; k < kt; ++k) d[k * W + c] = 0.0f;
  }
}

// Pack `lanes` lanes into ceil(lanes / W) panels, panel q (lanes q·W ..) at dst + q·W·kc.
template <int W>
void pack_block(const float* src, int64_t ld, bool lanes_contiguous, int64_t lanes, int64_t kc, float* dst) {
  for (int64_t q = 0; q < lanes; q += W) {
    const float* first = lanes_contiguous ? src + q : src + q * ld; // lane q at step 0
    pack_panel<W>(first, ld, lanes_contiguous, min_i64(W, lanes - q), kc, dst + q * kc);
  }
}

// op(A)[0:mc, 0:kc] -> ceil(mc/MR) panels of MR rows. A points at op(A)(0, 0): op(A)(i, k) is
// A[k·lda + i] when transposed (rows of op(A) are contiguous lanes), else A[i·lda + k].
template <int MR>
void pack_a(bool trans_a, const float* A, int64_t lda, int64_t mc, int64_t kc, float* Ap) {
  pack_block<MR>(A, lda, /*lanes_contiguous=*/trans_a, mc, kc, Ap);
}

// op(B)[0:kc, 0:nc] -> ceil(nc/NR) panels of NR columns. B points at op(B)(0, 0): op(B)(k, j) is
// B[j·ldb + k] when transposed, else B[k·ldb + j] (columns of op(B) are contiguous lanes).
template <int NR>
void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t kc, int64_t nc, float* Bp) {
  pack_block<NR>(B, ldb, /*lanes_contiguous=*/!trans_b, nc, kc, Bp);
}

// ---- micro-kernel ----------------------------------------------------------------------------
//
// V provides: reg (a vector of V::width floats), zero(), load(p) (aligned), loadu(p), storeu(p, v),
// broadcast(p) (splat *p), fma(a, b, c) = a·b + c, mul(a, b), splat(x).

// C tile (m × n valid of MR × NR) = alpha · acc + beta · C.
template <class V, int MR, int NV>
[[gnu::always_inline]] inline void store_tile(const typename V::reg (&acc)[MR][NV], float alpha, float beta, float* c,
                                              int64_t ldc, int64_t m, int64_t n) {
  constexpr int W = V::width, NR = NV * W;
  const typename V::reg va = V::splat(alpha), vb = V::splat(beta);
  if (m == MR && n == NR) { // the common case: straight to C with vector loads/stores
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        float* cp = c + r * ldc + v * W;
        V::storeu(cp, beta == 0.0f ? V::mul(va, acc[r][v]) : V::fma(va, acc[r][v], V::mul(vb, V::loadu(cp))));
      }
    return;
  }
  // A ragged edge tile: spill the accumulators, then update only the valid m × n part.
  alignas(64) float tile[MR * NR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) V::storeu(tile + r * NR + v * W, acc[r][v]);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      float& cij = c[r * ldc + j];
      cij = beta == 0.0f ? alpha * tile[r * NR + j] : alpha * tile[r * NR + j] + beta * cij;
    }
}

// Where the micro-kernel reads its MR × kc slice of A from.
template <int MR>
struct PackedPanel { // a panel of Ap: element (r, k) at p[k·MR + r]
  const float* p;
  const float* at(int r, int64_t k) const { return p + k * MR + r; }
};
// A itself, rows contiguous in k: element (r, k) at first[r · lda + k]; a ragged last panel (rows <
// MR) repeats its last row. The kernel computes its row pointers itself: an array of them passed
// by value is stored by the caller and loaded back by the kernel in wider pieces, which defeats
// store-to-load forwarding and makes the load wait until every older store, the previous tile's C
// among them, has reached the cache.
template <int MR>
struct RowsOfA {
  const float* first;
  int64_t lda;
  int64_t rows;
  const float* at(int r, int64_t k) const { return first + min_i64(r, rows - 1) * lda + k; }
};

// C[0:m, 0:n] = alpha · A_panel (MR × kc) · Bp_panel (kc × NR) + beta · C. Inlined into the
// macro-kernel, so that its A operand and arguments stay in registers.
template <class V, int MR, int NV, class APanel>
[[gnu::always_inline]] inline void micro_kernel(int64_t kc, const APanel a, const float* __restrict b, float alpha,
                                                float beta, float* __restrict c, int64_t ldc, int64_t m, int64_t n) {
  constexpr int W = V::width, NR = NV * W;
  for (int r = 0; r < MR; ++r) __builtin_prefetch(c + r * ldc, 1);

  typename V::reg acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();

#pragma GCC unroll 1
  for (int64_t k = 0; k < kc; ++k, b += NR) {
    typename V::reg bk[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bk[v] = V::load(b + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const typename V::reg ar = V::broadcast(a.at(r, k));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(ar, bk[v], acc[r][v]);
    }
  }
  store_tile<V, MR, NV>(acc, alpha, beta, c, ldc, m, n);
}

// ---- macro-kernel ----------------------------------------------------------------------------

// C[0:mc, 0:nc] = alpha · A (mc × kc) · Bp (kc × nc, packed) + beta · C
// a_packed: A is Ap (MR-tall panels); else A is op(A) itself, row i at A + i·lda, contiguous in k.
template <class V, int MR, int NV>
void macro_kernel(int64_t mc, int64_t nc, int64_t kc, float alpha, const float* A, bool a_packed, int64_t lda,
                  const float* Bp, float beta, float* C, int64_t ldc) {
  constexpr int NR = NV * V::width;
  for (int64_t j = 0; j < nc; j += NR)
    for (int64_t i = 0; i < mc; i += MR) {
      const int64_t m = min_i64(MR, mc - i), n = min_i64(NR, nc - j);
      if (a_packed) {
        micro_kernel<V, MR, NV>(kc, PackedPanel<MR>{A + i * kc}, Bp + j * kc, alpha, beta, C + i * ldc + j, ldc, m, n);
      } else {
        micro_kernel<V, MR, NV>(kc, RowsOfA<MR>{A + i * lda, lda, m}, Bp + j * kc, alpha, beta, C + i * ldc + j, ldc, m,
                                n);
      }
    }
}

template <class V, int MR, int NV>
constexpr KernelSet make_kernel_set(const char* name, int mc, int kc, int nc) {
  return KernelSet{name, MR, NV * V::width, mc, kc, nc, &pack_a<MR>, &pack_b<NV * V::width>, &macro_kernel<V, MR, NV>};
}

} // namespace
} // namespace pillars::cpu::gemm
