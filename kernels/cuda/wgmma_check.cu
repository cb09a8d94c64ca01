// See wgmma_check.h.
#include "kernels/cuda/wgmma_check.h"

#include <cuda_runtime.h>

#include "base/error.h"
#include "runtime/cuda_runtime.h"
#include "kernels/cuda/wgmma.cuh"

namespace pillars::cuda {
namespace {

constexpr int kWarpgroup = 128;
constexpr int kTile = 64; // rows of A, columns of D

#ifdef PILLARS_WGMMA
// This thread's A fragment for k-step `step` of mma_m64n64k16_rs, read from the row-major (64, K)
// A in global memory: warp w holds rows 16w .. 16w + 15; lane l's group g = l / 4 and pair q = l % 4
// give a[0] = A[16w + g][16·step + 2q, +1], a[1] the same columns of row 16w + g + 8, a[2] and
// a[3] those rows at columns + 8; each register holds two bf16, the lower column in the low half.
__device__ void a_fragment(const uint16_t* a, int K, int step, uint32_t (&frag)[4]) {
  const int t = threadIdx.x, row = 16 * (t / 32) + (t % 32) / 4, col = 16 * step + 2 * (t % 4);
  const auto pair = [&](int r, int c) { return uint32_t{a[r * K + c]} | uint32_t{a[r * K + c + 1]} << 16; };
  frag[0] = pair(row, col), frag[1] = pair(row + 8, col), frag[2] = pair(row, col + 8),
  frag[3] = pair(row + 8, col + 8);
}
#endif

// Shared-memory bytes of the kernel below: A and Bᵀ (or B), bf16, and room to align to 1,024.
constexpr int tile_product_smem(int K) { return 2 * kTile * K * 2 + 1024; }

// D = A B (see the header) by one warpgroup; *ran = 1 once it ran the wgmma code (sm_90a builds).
// A_IN_REGISTERS: A reaches wgmma as register fragments (mma_m64n64k16_rs, as attention's P does)
// instead of from shared memory. SWIZZLED: the operands lie in the 128-byte swizzle (the header).
// K is a template parameter: a loop of a run-time length around wgmma makes ptxas serialize the
// products (its warning C7520).
template <int K, bool A_IN_REGISTERS, bool SWIZZLED>
__global__ void __launch_bounds__(kWarpgroup)
    tile_product_kernel(const uint16_t* a, const uint16_t* bt, float* d, int* ran) {
#ifdef PILLARS_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* As = smem_raw + (1024 - wgmma::shared_address(smem_raw) % 1024) % 1024; // the swizzle's period
  uint8_t* Bs = As + kTile * K * 2;
  constexpr int kPanel = kTile * 128; // 64 rows × 128 bytes
  // Where element (r, k) of A (and of Bᵀ, when B is K-major) goes, and element (k, n) of B read MN-major.
  const auto kmajor = [](int r, int k) {
    return SWIZZLED ? k / 64 * kPanel + wgmma::sw128_offset(r, k % 64) : wgmma::kmajor_offset(r, k, K);
  };
  constexpr bool kBMnMajor = SWIZZLED && A_IN_REGISTERS;
  for (int e = threadIdx.x; e < kTile * K; e += kWarpgroup) {
    const int r = e / K, k = e % K;
    *reinterpret_cast<uint16_t*>(As + kmajor(r, k)) = a[e];
    *reinterpret_cast<uint16_t*>(Bs + (kBMnMajor ? wgmma::sw128_offset(k, r) : kmajor(r, k))) = bt[e];
  }
  wgmma::fence_shared_to_async();
  __syncthreads();
  wgmma::Accumulator acc = {};
  uint32_t fragments[K / 16][4];
  if constexpr (A_IN_REGISTERS) {
#pragma unroll // fragments stays in registers only if every index is known at compile time
    for (int step = 0; step < K / 16; ++step) a_fragment(a, K, step, fragments[step]);
  }
  wgmma::fence_operand(acc);
  if constexpr (A_IN_REGISTERS) wgmma::fence_operand(fragments);
  wgmma::fence();
  const uint32_t lbo = wgmma::kmajor_lbo(), sbo = wgmma::kmajor_sbo(K);
  // The descriptor of k-step `step` (16 columns of A or Bᵀ, 16 rows of B MN-major) of a tile.
  const auto step_descriptor = [&](const uint8_t* tile, int step, bool mn_major) {
    if (!SWIZZLED) return wgmma::descriptor(wgmma::shared_address(tile) + step * 2 * lbo, lbo, sbo);
    if (mn_major) return wgmma::descriptor_sw128(wgmma::shared_address(tile + step * 16 * 128), kPanel);
    return wgmma::descriptor_sw128(wgmma::shared_address(tile + step / 4 * kPanel + step % 4 * 32), 16);
  };
#pragma unroll
  for (int step = 0; step < K / 16; ++step) {
    const uint64_t b_desc = step_descriptor(Bs, step, kBMnMajor);
    if constexpr (A_IN_REGISTERS)
      wgmma::mma_m64n64k16_rs<kBMnMajor>(acc, fragments[step], b_desc, step > 0);
    else
      wgmma::mma_m64n64k16(acc, step_descriptor(As, step, false), b_desc, step > 0);
  }
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operand(acc);
  const int t = threadIdx.x;
#pragma unroll
  for (int r = 0; r < 32; ++r)
    d[wgmma::accumulator_row(t, r) * kTile + wgmma::accumulator_col(t, r)] = acc[r / 4][r % 4];
  if (t == 0) *ran = 1;
#endif
}

// Launches tile_product_kernel<K, ...> for the K and the layout asked for (K = 16, 32, ..., 256).
template <int K = 16>
void launch_tile_product(int k, bool a_in_registers, bool swizzled, const uint16_t* a, const uint16_t* bt, float* d,
                         int* ran) {
  if constexpr (K <= 256) {
    if (k != K) return launch_tile_product<K + 16>(k, a_in_registers, swizzled, a, bt, d, ran);
    const auto kernel = a_in_registers
                            ? (swizzled ? tile_product_kernel<K, true, true> : tile_product_kernel<K, true, false>)
                            : (swizzled ? tile_product_kernel<K, false, true> : tile_product_kernel<K, false, false>);
    PILLARS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, tile_product_smem(K)));
    kernel<<<1, kWarpgroup, tile_product_smem(K), stream()>>>(a, bt, d, ran);
    PILLARS_CUDA_LAUNCHED("wgmma tile_product_kernel");
  }
}

// Writes 1 to *ran where the code this GPU runs is the sm_90a build. On a Hopper, a build without
// 90a still runs (an sm_90 or sm_80 cubin, or PTX compiled by the driver), but without wgmma.
__global__ void sm90a_probe_kernel(int* ran) {
#ifdef PILLARS_WGMMA
  *ran = 1;
#endif
}

// Launches the probe once and reads its flag.
bool runs_sm90a_code() {
  int* ran = static_cast<int*>(device_alloc(sizeof(int)));
  cuda_zero(ran, sizeof(int));
  sm90a_probe_kernel<<<1, 1, 0, stream()>>>(ran);
  PILLARS_CUDA_LAUNCHED("wgmma sm90a_probe_kernel");
  int flag = 0;
  cuda_copy_to_host(&flag, ran, sizeof(int));
  device_free(ran);
  return flag == 1;
}

} // namespace

const std::string& wgmma_unavailable_reason() {
  static const std::string why = []() -> std::string {
    if (cuda_device_count() == 0) return cuda_unavailable_reason();
    const cudaDeviceProp& prop = device_properties();
    if (prop.major != 9)
      return str_cat("wgmma needs compute capability 9.0 (Hopper); this GPU is ", prop.major, ".", prop.minor);
    if (!runs_sm90a_code())
      return "this build has no sm_90a code (configure with PILLARS_CUDA_ARCHITECTURES including 90a, e.g. "
             "-DPILLARS_CUDA_ARCHITECTURES=90a)";
    return "";
  }();
  return why;
}

std::vector<float> wgmma_tile_product(const std::vector<uint16_t>& a, const std::vector<uint16_t>& bt, int K,
                                      bool a_in_registers, bool swizzled) {
  PILLARS_CHECK(K > 0 && K % 16 == 0 && K <= 256, "wgmma_tile_product: K = ", K, " (a multiple of 16, at most 256)");
  PILLARS_CHECK(!swizzled || a_in_registers || K % 64 == 0, "wgmma_tile_product: K = ", K,
                " (swizzled K-major operands come in panels of 64 columns)");
  PILLARS_CHECK(a.size() == size_t{kTile} * K && bt.size() == size_t{kTile} * K,
                "wgmma_tile_product: A and Bᵀ must be (64, K)");
  const std::string why = wgmma_unavailable_reason();
  PILLARS_CHECK(why.empty(), "wgmma_tile_product: ", why);
  const size_t operand_bytes = size_t{kTile} * K * 2, d_bytes = size_t{kTile} * kTile * 4;
  void *da = device_alloc(operand_bytes), *dbt = device_alloc(operand_bytes), *dd = device_alloc(d_bytes),
       *dran = device_alloc(sizeof(int));
  cuda_copy_to_device(da, a.data(), operand_bytes);
  cuda_copy_to_device(dbt, bt.data(), operand_bytes);
  cuda_zero(dran, sizeof(int));
  launch_tile_product(K, a_in_registers, swizzled, static_cast<const uint16_t*>(da), static_cast<const uint16_t*>(dbt),
                      static_cast<float*>(dd), static_cast<int*>(dran));
  std::vector<float> d(size_t{kTile} * kTile);
  int ran = 0;
  cuda_copy_to_host(d.data(), dd, d_bytes);
  cuda_copy_to_host(&ran, dran, sizeof(int));
  for (void* p : {da, dbt, dd, dran}) device_free(p);
  PILLARS_CHECK(ran == 1,
                "wgmma_tile_product: this build has no sm_90a code (configure with PILLARS_CUDA_ARCHITECTURES "
                "including 90a)");
  return d;
}

} // namespace pillars::cuda
