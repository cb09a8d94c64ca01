// The CUDA slots of dropout and masked_fill (engine/ops/dropout.cpp): dropout gathers p, the
// seed, the stream offset (its DropoutParams) and the run seed (on the device, for CUDA-graph
// replays) into the kernel's arguments; both call kernels/cuda/dropout.h.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/dropout.h"
#include "kernels/cuda/dropout.h"

namespace pillars::cuda {

void op_dropout(const KernelContext& c) {
  const ops::DropoutParams& p = params_of<ops::DropoutParams>(c.node);
  DropoutArgs a;
  a.n = c.in[0].numel();
  a.p = p.p;
  a.scale = 1.0f / (1.0f - p.p);
  a.seed = p.seed;
  a.offset = p.rng_offset;
  a.run_seed = c.device_run_seed;
  a.host_run_seed = c.run_seed;
  dropout(a, c.in[0].data<float>(), c.out[0].data<float>());
}

// inputs: x f32, mask i32 (broadcast to x); MaskedFillParams value
void op_masked_fill(const KernelContext& c) {
  const Tensor &x = c.in[0], &mask = c.in[1];
  masked_fill({.x_dims = x.shape(), .mask_dims = mask.shape(), .value = params_of<ops::MaskedFillParams>(c.node).value},
              x.data<float>(), mask.data<int32_t>(), c.out[0].data<float>());
}

} // namespace pillars::cuda
