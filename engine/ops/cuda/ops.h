// The CUDA kernels of every engine op, in the KernelContext form the executor calls: the `cuda`
// slot of each OpDef (engine/op.h, PILLARS_CUDA_KERNEL) points here, and `cuda_workspace` at the
// *_workspace functions. These are adapters: each validates nothing that the op's shape rule
// already checked; it unpacks the node's tensors, shapes and params struct (params_of) and calls
// the pointer-and-size kernels of kernels/cuda/, which launch on cuda::stream(). Tensors are
// device tensors, contiguous, shapes as inferred.
//
// One adapter file per op family, engine/ops/cuda/<family>.cu, over the kernels' header
// kernels/cuda/<family>.h (the shapes) and source kernels/cuda/<family>.cu (the algorithm):
// elementwise, cast, reduce, shape, matmul, linear_act, softmax, layernorm, cross_entropy,
// linear_cross_entropy, embedding,
// dropout, attention (which also dispatches to kernels/cuda/cudnn_attention.h, the cuDNN
// reference backend), attention_mask, head_gram, decoding. Ops absent here run on the CPU
// through the executor's host fallback (see Executor).
#pragma once
#include <cstddef>

#include "engine/op.h"

namespace pillars::cuda {

// elementwise.cu
void op_add(const KernelContext& c);
void op_sub(const KernelContext& c);
void op_mul(const KernelContext& c);
void op_div(const KernelContext& c);
void op_scale(const KernelContext& c);
void op_add_scalar(const KernelContext& c);
void op_exp(const KernelContext& c);
void op_log(const KernelContext& c);
void op_sqrt(const KernelContext& c);
void op_tanh(const KernelContext& c);
void op_relu(const KernelContext& c);
void op_gelu(const KernelContext& c);
void op_relu_backward(const KernelContext& c);
void op_leaky_relu(const KernelContext& c);
void op_leaky_relu_backward(const KernelContext& c);
void op_gelu_backward(const KernelContext& c);
void op_fill(const KernelContext& c);
void op_sum_to(const KernelContext& c);
void op_broadcast_to(const KernelContext& c);
// reduce.cu
void op_sum(const KernelContext& c);
void op_mean(const KernelContext& c);
void op_max(const KernelContext& c);
void op_max_backward(const KernelContext& c);
// shape.cu
void op_permute(const KernelContext& c);
void op_slice(const KernelContext& c);
void op_pad_slice(const KernelContext& c);
void op_concat(const KernelContext& c);
// matmul.cu
void op_matmul(const KernelContext& c);
// linear_act.cu
void op_linear_act(const KernelContext& c);
size_t op_linear_act_workspace(const Graph& g, const Node& n); // cuBLASLt's workspace
// softmax.cu
void op_softmax(const KernelContext& c);
void op_log_softmax(const KernelContext& c);
void op_softmax_backward(const KernelContext& c);
void op_log_softmax_backward(const KernelContext& c);
// layernorm.cu
void op_layer_norm(const KernelContext& c);
void op_layer_norm_backward(const KernelContext& c);
size_t op_layer_norm_backward_workspace(const Graph& g, const Node& n);
// cross_entropy.cu
void op_cross_entropy(const KernelContext& c);
void op_cross_entropy_backward(const KernelContext& c);
size_t op_cross_entropy_workspace(const Graph& g, const Node& n); // device scratch bytes
size_t op_cross_entropy_backward_workspace(const Graph& g, const Node& n);

// linear_cross_entropy.cu
void op_linear_cross_entropy(const KernelContext& c);
size_t op_linear_cross_entropy_workspace(const Graph& g, const Node& n); // block logits, lse, row losses, scale
// embedding.cu
void op_embedding(const KernelContext& c);
void op_embedding_backward(const KernelContext& c);
// cast.cu (f32 ↔ bf16)
void op_cast(const KernelContext& c);
// dropout.cu
void op_dropout(const KernelContext& c);
void op_masked_fill(const KernelContext& c);
// attention.cu
void op_attention(const KernelContext& c);
void op_attention_backward(const KernelContext& c);
size_t op_attention_backward_workspace(const Graph& g, const Node& n);
// attention_mask.cu (the mask of the composed attention, attention_reference)
void op_attention_mask(const KernelContext& c);
// head_gram.cu (GHT's per-head Gram matrix)
void op_head_gram(const KernelContext& c);
size_t op_head_gram_workspace(const Graph& g, const Node& n);
void op_head_gram_backward(const KernelContext& c);
// decoding.cu (key/value caches, updated in place, and beam-search candidates)
void op_cache_gather(const KernelContext& c);
size_t op_cache_gather_workspace(const Graph& g, const Node& n); // the in-place gather's scratch
void op_cache_write(const KernelContext& c);
void op_beam_candidates(const KernelContext& c);

} // namespace pillars::cuda
