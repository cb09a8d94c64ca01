// The CUDA slot of the cast op (engine/ops/cast.cpp): f32 ↔ bf16 by kernels/cuda/elementwise.h's
// conversions, or a device copy when the types agree.
#include "engine/ops/cast.h"
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/elementwise.h"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {

// input x (f32 or bf16) → output y, the same shape, in CastParams::to
void op_cast(const KernelContext& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.out[0];
  const int64_t n = x.numel();
  if (x.dtype() == y.dtype())
    PILLARS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), static_cast<size_t>(n) * dtype_size(x.dtype()),
                                       cudaMemcpyDeviceToDevice, stream()));
  else if (y.dtype() == DType::bf16)
    f32_to_bf16({.n = n}, x.data<float>(), y.data<uint16_t>());
  else
    bf16_to_f32({.n = n}, x.data<uint16_t>(), y.data<float>());
}

} // namespace pillars::cuda
