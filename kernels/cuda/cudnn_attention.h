// The cuDNN reference backend for fused attention (an attention node with kernel = cudnn, see
// engine/ops/attention.h): cuDNN's fused flash attention, forward and backward, built through the
// cuDNN graph (backend) API. kernels/cuda/cudnn_attention.cu has the graphs node by node.
//
//   Q (B, Tq, H, D), K and V (B, Tk, H, D), O (B, Tq, H, D) in device memory, row-major — the
//   engine's layout, handed to cuDNN as strided (B, H, T, D) views; lse (B, H, Tq) float, the
//   natural-log log-sum-exp of each row's scaled, masked logits (cuDNN's "stats").
//   Masks as in attention.h: key j is hidden from query i when j ≥ key_lengths[b] (i32 (B) on the
//   device), or, if causal, when j > i + Tk − Tq. A batch row with key_lengths[b] ≤ 0 sees nothing:
//   O = 0, lse = −inf, zero gradients (as our kernels).
//
// cuDNN's fused engine computes in bf16 (fp32 accumulation and statistics) whatever the
// cuda::Precision mode: fp32 tensors are converted into the workspace and the results back.
//
// What it refuses, with a message naming train.attention_backend "cudnn": attention dropout
// (cuDNN's Philox stream is not ours, so the masks could never match the CPU's), the
// probabilities output (GHT's feature map A: the fused kernel never forms it), head dimensions
// other than 32, 64, 128, causal attention with Tq > Tk, and causal attention with key padding and
// Tq < Tk (cuDNN's results differed from ours there on an H200, cuDNN 9.14; the cause is not
// established — perhaps the diagonal aligned to each row's key length rather than to Tk).
//
// Plain C++ (no CUDA or cuDNN types). In a build without cuDNN (PILLARS_NO_CUDNN, or cuDNN not
// found) kernels/cuda/cudnn_none.cpp defines these functions: cudnn_available() is false and the
// entry points throw "this build of pillars has no cuDNN".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace pillars::cuda {

// Whether the cuDNN backend can run here: a GPU (sm_80 or newer), cuDNN in this build, and a
// loaded cuDNN library of the major version the build was compiled against (9.x). When it
// cannot, the reason says why ("" when it can).
bool cudnn_available();
std::string cudnn_unavailable_reason();
std::string cudnn_version_string(); // e.g. "9.19.0 (built against 9.19.0)"; "" without cuDNN

struct CudnnAttentionArgs {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, D = 0; // D ∈ {32, 64, 128}
  float scale = 1.0f;
  bool causal = false;
  const int32_t* key_lengths = nullptr; // device (B) or nullptr
  float dropout_p = 0.0f;               // must be 0 (refused otherwise)
  bool emit_probs = false;              // must be false (refused otherwise)
  // false: Q, K, V, O, dO, dQ, dK, dV are float (converted to and from bf16 in the workspace);
  // true: they are bf16 already and cuDNN reads and writes them in place (the benchmark).
  bool bf16_io = false;
};

// Throws pillars::Error with the refusal message when cuDNN cannot run `a` (see above).
void cudnn_attention_check(const CudnnAttentionArgs& a);

// Device scratch bytes of each pass: the bf16 copies, cuDNN's own workspace and intermediates.
// The first call for a shape builds and caches cuDNN's execution plan (slow: heuristics and,
// for some engines, run-time compilation), so it needs the GPU.
size_t cudnn_attention_forward_workspace(const CudnnAttentionArgs& a);
size_t cudnn_attention_backward_workspace(const CudnnAttentionArgs& a);

// Queued on cuda::stream(). `workspace` holds the bytes above; nullptr takes them from a scratch
// block the backend keeps (which only grows, and may not grow during a CUDA graph capture).
// Element type of Q … dV: float, or bf16 when a.bf16_io.
void cudnn_attention_forward(const CudnnAttentionArgs& a, const void* Q, const void* K, const void* V, void* O,
                             float* lse, void* workspace);
void cudnn_attention_backward(const CudnnAttentionArgs& a, const void* Q, const void* K, const void* V, const void* O,
                              const float* lse, const void* dO, void* dQ, void* dK, void* dV, void* workspace);

} // namespace pillars::cuda
