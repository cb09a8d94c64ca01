// The CUDA slots of attention and attention_backward (engine/ops/attention.cpp has the node
// layouts): each reads (B, T, H, D) off the shapes, the scale, the masks, dropout and the optional
// outputs off the node's ops::AttentionParams, and calls our flash attention (kernels/cuda/attention.h) or, for a node whose kernel
// is ops::AttentionKernel::cudnn, cuDNN's fused attention (kernels/cuda/cudnn_attention.h): the
// forward takes its scratch from the cuDNN backend's own block (the attention op declares no
// CUDA workspace), the backward from the executor's workspace, whose size query covers cuDNN's
// needs.
#include "engine/ops/attention.h"
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cudnn_attention.h"

namespace pillars::cuda {
namespace {

// The arguments of an attention / attention_backward node: q (B, Tq, H, D), k (B, Tk, H, D).
AttentionArgs op_args(const KernelContext& c, const Shape& q, const Shape& k, const Tensor* key_lengths) {
  const ops::AttentionParams& at = params_of<ops::AttentionParams>(c.node);
  AttentionArgs a;
  a.B = q[0], a.Tq = q[1], a.H = q[2], a.D = q[3], a.Tk = k[1];
  a.scale = at.scale;
  a.causal = at.causal;
  a.key_lengths = key_lengths ? key_lengths->data<int32_t>() : nullptr;
  a.dropout_p = at.dropout;
  a.seed = at.seed; // the executor's run seed is added on the device (c.device_run_seed)
  a.rng_offset = at.rng_offset;
  a.run_seed = c.device_run_seed;
  a.precision = precision();
  return a;
}

bool runs_on_cudnn(const Node& n) { return params_of<ops::AttentionParams>(n).kernel == ops::AttentionKernel::cudnn; }

// The cuDNN backend's arguments for a node (fp32 tensors). For the workspace query only whether
// key_lengths is null matters: `has_key_lengths` stands in for the pointer there.
CudnnAttentionArgs cudnn_args(const Node& n, const Shape& q, const Shape& k, const int32_t* key_lengths) {
  const ops::AttentionParams& p = params_of<ops::AttentionParams>(n);
  CudnnAttentionArgs a;
  a.B = q[0], a.Tq = q[1], a.H = q[2], a.D = q[3], a.Tk = k[1];
  a.scale = p.scale;
  a.causal = p.causal;
  a.key_lengths = key_lengths;
  a.dropout_p = p.dropout;
  a.emit_probs = p.emit_probs;
  return a;
}

} // namespace

// attention: inputs q, k, v [, key_lengths]; outputs o, lse [, probs]
void op_attention(const KernelContext& c) {
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  if (runs_on_cudnn(c.node)) {
    const CudnnAttentionArgs a =
        cudnn_args(c.node, q.shape(), k.shape(), c.in.size() > 3 ? c.in[3].data<int32_t>() : nullptr);
    cudnn_attention_forward(a, q.data<float>(), k.data<float>(), v.data<float>(), c.out[0].data<float>(),
                            c.out[1].data<float>(), nullptr);
    return;
  }
  const AttentionArgs a = op_args(c, q.shape(), k.shape(), c.in.size() > 3 ? &c.in[3] : nullptr);
  const bool emit_probs = params_of<ops::AttentionParams>(c.node).emit_probs;
  attention_forward<float>(a, q.data<float>(), k.data<float>(), v.data<float>(), c.out[0].data<float>(),
                           c.out[1].data<float>(), emit_probs ? c.out[2].data<float>() : nullptr);
}

// attention_backward: inputs q, k, v, o, lse, dO [, key_lengths]; outputs dq, dk, dv
void op_attention_backward(const KernelContext& c) {
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  if (runs_on_cudnn(c.node)) {
    const CudnnAttentionArgs a =
        cudnn_args(c.node, q.shape(), k.shape(), c.in.size() > 6 ? c.in[6].data<int32_t>() : nullptr);
    cudnn_attention_backward(a, q.data<float>(), k.data<float>(), v.data<float>(), c.in[3].data<float>(),
                             c.in[4].data<float>(), c.in[5].data<float>(), c.out[0].data<float>(),
                             c.out[1].data<float>(), c.out[2].data<float>(), c.workspace);
    return;
  }
  const AttentionArgs a = op_args(c, q.shape(), k.shape(), c.in.size() > 6 ? &c.in[6] : nullptr);
  attention_backward<float>(a, q.data<float>(), k.data<float>(), v.data<float>(), c.in[3].data<float>(),
                            c.in[4].data<float>(), c.in[5].data<float>(), c.out[0].data<float>(),
                            c.out[1].data<float>(), c.out[2].data<float>(), c.workspace);
}

size_t op_attention_backward_workspace(const Graph& g, const Node& n) {
  const Shape q = g.shape(n.inputs[0]), k = g.shape(n.inputs[1]);
  if (runs_on_cudnn(n)) {
    static const int32_t stand_in = 0; // never read: only "has key lengths" shapes the workspace
    return cudnn_attention_backward_workspace(cudnn_args(n, q, k, n.inputs.size() > 6 ? &stand_in : nullptr));
  }
  AttentionArgs a;
  a.B = q[0], a.Tq = q[1], a.H = q[2], a.D = q[3], a.Tk = k[1];
  return attention_backward_workspace(a);
}

} // namespace pillars::cuda
