// The CUDA slot of linear_act (engine/ops/linear_act.cpp): flattens x to (rows, in), picks the
// activation from the node's LinearActParams, and calls kernels/cuda/linear_act.h with the executor's workspace,
// whose size is cuBLASLt's scratch.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/linear_act.h"
#include "kernels/cuda/linear_act.h"

namespace pillars::cuda {

size_t op_linear_act_workspace(const Graph&, const Node&) { return linear_act_workspace_bytes(); }

// inputs: x (…, in), W (out, in), b (out); activation relu | gelu → y (…, out) [, pre (…, out) for gelu]
void op_linear_act(const KernelContext& c) {
  const Tensor &xt = c.in[0], &wt = c.in[1], &bt = c.in[2];
  const int64_t out = wt.shape()[0], in = wt.shape()[1], rows = in == 0 ? c.out[0].numel() / out : xt.numel() / in;
  const bool gelu = params_of<ops::LinearActParams>(c.node).activation == ops::Activation::gelu;
  float* y = c.out[0].data<float>();
  float* pre = gelu ? c.out[1].data<float>() : nullptr;
  linear_act({.rows = rows, .out = out, .in = in, .gelu = gelu}, xt.data<float>(), wt.data<float>(), bt.data<float>(),
             y, pre, c.workspace);
}

} // namespace pillars::cuda
