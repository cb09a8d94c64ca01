// The CUDA slot of matmul (engine/ops/matmul.cpp): reads M, N, K and the batch off the shapes
// and the transpose flags and alpha off the node's MatmulParams, and calls kernels/cuda/matmul.h.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/matmul.h"
#include "kernels/cuda/matmul.h"

namespace pillars::cuda {

// inputs: A (…, M, K), B (…, K, N) or 2-D (shared); params trans_a, trans_b, alpha
void op_matmul(const KernelContext& c) {
  const ops::MatmulParams& p = params_of<ops::MatmulParams>(c.node);
  const bool ta = p.trans_a, tb = p.trans_b;
  const Shape &as = c.in[0].shape(), &bs = c.in[1].shape();
  const size_t ra = as.size(), rb = bs.size();
  const int64_t M = ta ? as[ra - 1] : as[ra - 2], K = ta ? as[ra - 2] : as[ra - 1];
  const int64_t N = tb ? bs[rb - 2] : bs[rb - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) batch *= as[i];
  const bool b_shared = rb == 2;
  matmul(ta, tb, batch, M, N, K, b_shared, p.alpha, c.in[0].data<float>(), c.in[1].data<float>(),
         c.out[0].data<float>());
}

} // namespace pillars::cuda
