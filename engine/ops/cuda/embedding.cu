// The CUDA slots of embedding and embedding_backward (engine/ops/embedding.cpp): each
// flattens the ids to (n) and calls kernels/cuda/embedding.h.
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/embedding.h"

namespace pillars::cuda {

// inputs: table (V, D), ids (...) → (..., D)
void op_embedding(const KernelContext& c) {
  const Tensor &table = c.in[0], &ids = c.in[1];
  embedding_forward(table.data<float>(), ids.data<int32_t>(), c.out[0].data<float>(), ids.numel(), table.dim(0),
                    table.dim(1));
}

// inputs: dout (..., D), ids (...) → dtable (V, D) (V from the output's shape)
void op_embedding_backward(const KernelContext& c) {
  const Tensor &dout = c.in[0], &ids = c.in[1];
  Tensor& dtable = c.out[0];
  embedding_backward(dout.data<float>(), ids.data<int32_t>(), dtable.data<float>(), ids.numel(), dtable.dim(0),
                     dtable.dim(1));
}

} // namespace pillars::cuda
