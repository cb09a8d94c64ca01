// The CUDA slots of embedding and embedding_backward (engine/ops/embedding.cpp): each
// flattens the ids to (n) and calls kernels/cuda/embedding.h.
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/embedding.h"

namespace pillars::cuda {

// inputs: table (V, D), ids (...) → (..., D)
void op_embedding(const KernelContext& c) {
  const Tensor &table = c.in[0], &ids = c.in[1];
  embedding_forward({.n = ids.numel(), .V = table.dim(0), .D = table.dim(1)}, table.data<float>(), ids.data<int32_t>(),
                    c.out[0].data<float>());
}

// inputs: dout (..., D), ids (...) → dtable (V, D) (V from the output's shape)
void op_embedding_backward(const KernelContext& c) {
  const Tensor &dout = c.in[0], &ids = c.in[1];
  Tensor& dtable = c.out[0];
  embedding_backward({.n = ids.numel(), .V = dtable.dim(0), .D = dtable.dim(1)}, dout.data<float>(),
                     ids.data<int32_t>(), dtable.data<float>());
}

} // namespace pillars::cuda
