// See tensor_map.h.
#include "kernels/cuda/tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h> // PFN_cuTensorMapEncodeTiled

#include <cstdint>

#include "base/error.h"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

// The driver's cuTensorMapEncodeTiled (the CUDA 12.0 signature), looked up once.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    PILLARS_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    PILLARS_CHECK(found == cudaDriverEntryPointSuccess && fn != nullptr,
                  "the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a driver for CUDA 12.0 or later)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

} // namespace

CUtensorMap head_tensor_map(const void* X, int B, int T, int H, int D, int rows) {
  PILLARS_CHECK(D % 64 == 0 && rows > 0 && rows <= 256, "head_tensor_map: D = ", D, ", rows = ", rows,
                " (D a multiple of 64, 1 ≤ rows ≤ 256)");
  PILLARS_CHECK(reinterpret_cast<uintptr_t>(X) % 16 == 0, "head_tensor_map: the tensor is not 16-byte aligned");
  constexpr cuuint64_t kBytes = 2; // bf16
  const cuuint64_t dims[4] = {cuuint64_t(D), cuuint64_t(H), cuuint64_t(T), cuuint64_t(B)};
  // Bytes from one index to the next of dimensions 1, 2, 3 (dimension 0 is contiguous).
  const cuuint64_t strides[3] = {D * kBytes, cuuint64_t(H) * D * kBytes, cuuint64_t(T) * H * D * kBytes};
  const cuuint32_t box[4] = {64, 1, cuuint32_t(rows), 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  CUtensorMap map;
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(X), dims, strides, box,
                               element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  PILLARS_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed (CUresult ", static_cast<int>(r), ") for a (", B,
                ", ", T, ", ", H, ", ", D, ") bf16 tensor");
  return map;
}

} // namespace pillars::cuda
