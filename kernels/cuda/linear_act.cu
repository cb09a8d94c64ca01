// y = act(x Wᵀ + b) on the GPU: one cuBLASLt matmul whose epilogue adds the bias (and applies ReLU).
//
//   x (rows, in) (all leading axes flattened), W (out, in), b (out)
//   → y (rows, out)                       relu
//   → y (rows, out), pre (rows, out)      gelu, pre = x Wᵀ + b
//
// Layout. cuBLASLt is column-major, our tensors row-major (see matmul.cu): row-major y (rows, out)
// is column-major yᵀ (out × rows) = W · xᵀ, so the product is D (m = out, n = rows, k = in) with
// A = W stored k × m (ld in) and transposed, B = x stored k × n (ld in), D ld out. cuBLASLt's bias
// has one entry per row of D — per output feature, which is what a linear layer's bias is.
//
// Epilogues:
//   relu  CUBLASLT_EPILOGUE_RELU_BIAS writes y = max(D + b, 0): the whole op is one kernel.
//   gelu  CUBLASLT_EPILOGUE_BIAS writes pre = D + b, then one elementwise kernel y = gelu(pre) with
//         the exact (erf) GELU of ops::gelu. cuBLASLt also has CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
//         which writes y and pre (its "aux" output) in one kernel — the reason this op returns pre —
//         but its documentation does not say which GELU it computes (exact erf, or the tanh
//         approximation, which differs by up to 4.7e-4). It is used only when the environment sets
//         PILLARS_CUBLASLT_GELU=1 (and out % 8 == 0, which the aux leading dimension requires);
//         tests/test_cuda_ops.cpp prints how far it lands from the exact GELU. Until a GPU run has
//         shown that it is the exact one, the default stays with the BIAS epilogue.
//
// Plans. The matmul descriptor, the three layouts and the heuristic's choice of algorithm are made
// once per (rows, out, in, epilogue, compute type, pointer alignment, workspace) and cached: the
// first run of a graph (before the executor captures it as a CUDA graph) asks the heuristic; later
// calls only set the bias/aux pointers and enqueue. The heuristic is told the pointers' real
// alignment (a view may start at any float), and cuBLASLt's workspace is the op's cuda_workspace,
// which the executor allocates once (a capture must not allocate). Where the heuristic offers no
// algorithm, the op falls back to cublasGemmEx plus the same elementwise kernel adding bias and
// activation.
//
// Precision (cuda::precision()) as in matmul.cu: fp32 → CUBLAS_COMPUTE_32F_PEDANTIC; bf16 →
// CUBLAS_COMPUTE_32F_FAST_16BF (bf16 operands on the tensor cores, fp32 accumulation, fp32 in/out).
//
// Backward: none here. The op's vjp (engine/ops/linear_act.cpp) is relu_backward / gelu_backward,
// two matmuls and a sum_to — the kernels the unfused graph uses. cuBLASLt's DRELU_BGRAD /
// DGELU_BGRAD epilogues would fuse the activation gradient into the GEMM that *produces* dy
// (the next layer's dX = dZ·W), which belongs to another node's vjp; using them needs a second,
// backward-graph fusion, not this op.
//
// The API is linear_act.h; engine/ops/cuda/linear_act.cu adapts the op to it.
#include "kernels/cuda/linear_act.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr size_t kWorkspaceBytes = 32u << 20; // cuBLAS's recommendation for Hopper
constexpr int kThreads = 256;

cublasComputeType_t compute_type() {
  return precision() == Precision::fp32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F_FAST_16BF;
}

__device__ __forceinline__ float gelu_exact(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

// Over a row-major (total / n, n) matrix: z = src (+ bias[column]); pre = z if asked; y = act(z).
// src may be pre or y (each element is read before it is written, by the same thread).
__global__ void bias_activation_kernel(const float* src, const float* bias, float* pre, float* y, int64_t total,
                                       int64_t n, bool gelu) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float z = src[i];
    if (bias) z += bias[i % n];
    if (pre) pre[i] = z;
    y[i] = gelu ? gelu_exact(z) : (z > 0.0f ? z : 0.0f);
  }
}

void bias_activation(const float* src, const float* bias, float* pre, float* y, int64_t total, int64_t n, bool gelu) {
  if (total == 0) return;
  const int64_t cap = static_cast<int64_t>(device_properties().multiProcessorCount) * 16;
  const unsigned grid =
      static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks_for(total, kThreads), cap)));
  bias_activation_kernel<<<grid, kThreads, 0, stream()>>>(src, bias, pre, y, total, n, gelu);
  PILLARS_CUDA_LAUNCHED("bias_activation_kernel");
}

// The largest power of two (≤ 256) dividing the address: what cuBLASLt's heuristic must assume.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 4 && a % align != 0) align /= 2;
  return align;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool usable = false; // the heuristic returned an algorithm
};

// (rows, out, in, epilogue, compute type, alignment, workspace bytes)
using PlanKey = std::tuple<int64_t, int64_t, int64_t, uint32_t, int, uint32_t, size_t>;

struct PlanCache {
  std::mutex mutex;
  std::map<PlanKey, Plan> plans;
};
PlanCache& plan_cache() {
  static PlanCache* c = new PlanCache; // never destroyed: descriptors outlive static teardown order
  return *c;
}

template <class T>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  PILLARS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

// Points the plan's descriptor at this call's bias and aux buffers.
void set_pointers(const Plan& p, const float* bias, float* aux, int64_t aux_ld) {
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
  if (aux) {
    set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(aux));
    set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld);
  }
}

// Creates the descriptor and layouts and asks the heuristic for one algorithm (the caller holds
// the cache's lock). The pointers are set first: the heuristic reads their alignment.
Plan make_plan(int64_t rows, int64_t out, int64_t in, cublasLtEpilogue_t epilogue, uint32_t align, size_t workspace,
               const float* bias, float* aux) {
  Plan p;
  PILLARS_CUDA_CHECK(cublasLtMatmulDescCreate(&p.desc, compute_type(), CUDA_R_32F));
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(CUBLAS_OP_T));
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(CUBLAS_OP_N));
  set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(epilogue));
  set_pointers(p, bias, aux, out);
  PILLARS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, static_cast<uint64_t>(in), static_cast<uint64_t>(out),
                                                in)); // W: k × m
  PILLARS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, static_cast<uint64_t>(in),
                                                static_cast<uint64_t>(rows), in)); // x: k × n
  PILLARS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, static_cast<uint64_t>(out),
                                                static_cast<uint64_t>(rows), out)); // y: m × n

  cublasLtMatmulPreference_t pref = nullptr;
  PILLARS_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t max_workspace = workspace;
  PILLARS_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &max_workspace, sizeof(max_workspace)));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    PILLARS_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  // No algorithm is not an error here (the fallback path runs): the status is not thrown.
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(cublas_lt(), p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &returned);
  PILLARS_CUDA_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
      result.workspaceSize <= workspace) {
    p.algo = result.algo;
    p.usable = true;
  }
  return p;
}

// D = W·xᵀ (+ epilogue) through cuBLASLt; false when no algorithm fits (nothing was enqueued).
bool lt_matmul(const float* x, const float* w, const float* bias, float* d_out, float* aux, int64_t rows, int64_t out,
               int64_t in, cublasLtEpilogue_t epilogue, void* workspace, size_t workspace_bytes) {
  uint32_t align = std::min({alignment_of(x), alignment_of(w), alignment_of(bias), alignment_of(d_out)});
  if (aux) align = std::min(align, alignment_of(aux));
  const PlanKey key{rows,           out, in, static_cast<uint32_t>(epilogue), static_cast<int>(compute_type()), align,
                    workspace_bytes};
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.plans.find(key);
  if (it == cache.plans.end())
    it = cache.plans.emplace(key, make_plan(rows, out, in, epilogue, align, workspace_bytes, bias, aux)).first;
  const Plan& p = it->second;
  if (!p.usable) return false;
  set_pointers(p, bias, aux, out);
  const float alpha = 1.0f, beta = 0.0f;
  PILLARS_CUDA_CHECK(cublasLtMatmul(cublas_lt(), p.desc, &alpha, w, p.a, x, p.b, &beta, d_out, p.d, d_out, p.d, &p.algo,
                                    workspace, workspace_bytes, stream()));
  return true;
}

// The fallback: D = W·xᵀ by cublasGemmEx (as matmul.cu computes a linear layer), epilogue left to
// the elementwise kernel.
void plain_matmul(const float* x, const float* w, float* d_out, int64_t rows, int64_t out, int64_t in) {
  const float alpha = 1.0f, beta = 0.0f;
  PILLARS_CUDA_CHECK(cublasGemmEx(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(rows),
                                  static_cast<int>(in), &alpha, w, CUDA_R_32F, static_cast<int>(in), x, CUDA_R_32F,
                                  static_cast<int>(in), &beta, d_out, CUDA_R_32F, static_cast<int>(out), compute_type(),
                                  CUBLAS_GEMM_DEFAULT));
}

bool lt_gelu_requested() {
  const char* v = std::getenv("PILLARS_CUBLASLT_GELU");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace

size_t linear_act_workspace_bytes() { return kWorkspaceBytes; }

void linear_act(const LinearActArgs& a, const float* x, const float* w, const float* b, float* y, float* pre,
                void* workspace) {
  const int64_t rows = a.rows, out = a.out, in = a.in;
  const bool gelu = a.gelu;
  const int64_t total = rows * out;
  if (total == 0) return;
  PILLARS_CHECK(rows <= INT32_MAX && out <= INT32_MAX && in <= INT32_MAX, "linear_act: extents too large for cuBLAS");
  float* d_out = gelu ? pre : y; // where x Wᵀ (+ b) lands
  if (in == 0) {                 // an empty sum: the output is act(b)
    PILLARS_CUDA_CHECK(cudaMemsetAsync(d_out, 0, static_cast<size_t>(total) * sizeof(float), stream()));
    bias_activation(d_out, b, pre, y, total, out, gelu);
    return;
  }
  const size_t workspace_bytes = workspace ? kWorkspaceBytes : 0;
  if (gelu && lt_gelu_requested() && out % 8 == 0 &&
      lt_matmul(x, w, b, y, pre, rows, out, in, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, workspace, workspace_bytes))
    return;
  if (lt_matmul(x, w, b, d_out, nullptr, rows, out, in, gelu ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS,
                workspace, workspace_bytes)) {
    if (gelu) bias_activation(pre, nullptr, nullptr, y, total, out, true); // y = gelu(pre)
    return;
  }
  plain_matmul(x, w, d_out, rows, out, in);
  bias_activation(d_out, b, pre, y, total, out, gelu); // z = D + b (kept as pre for gelu), y = act(z)
}

} // namespace pillars::cuda
