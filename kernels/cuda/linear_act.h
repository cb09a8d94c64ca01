// y = act(x Wᵀ + b) on the GPU through cuBLASLt: the plain-pointer API under the linear_act op
// (adapter: engine/ops/cuda/linear_act.cu; epilogues, plans and fallback: linear_act.cu).
// Row-major f32 device arrays:
//
//   x (rows, in), W (out, in), b (out)
//   → y (rows, out)                         gelu = false: y = relu(x Wᵀ + b)
//   → y (rows, out), pre (rows, out)        gelu = true:  pre = x Wᵀ + b, y = gelu(pre) (exact erf)
//
// `workspace` is cuBLASLt's scratch, linear_act_workspace_bytes() bytes of device memory, or
// nullptr (then cuBLASLt gets none). in = 0 gives y = act(b). Queued on cuda::stream() in the
// precision of cuda::precision(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pillars::cuda {

struct LinearActArgs {
  int64_t rows = 0, out = 0, in = 0; // x (rows, in), W (out, in), b (out) → y (rows, out)
  bool gelu = false;                 // false: y = relu(x Wᵀ + b); true: pre = x Wᵀ + b, y = gelu(pre)
};
// x (rows, in), W (out, in), b (out) → y (rows, out), pre (rows, out) (gelu only, else null);
// workspace: linear_act_workspace_bytes() bytes or null.
void linear_act(const LinearActArgs& a, const float* x, const float* w, const float* b, float* y, float* pre,
                void* workspace);
size_t linear_act_workspace_bytes();

} // namespace pillars::cuda
