// The optimizers' elementwise loops on the GPU (declared in adam.h; the update rules are in
// kernels/cpu/adam.h).
//
// Shapes: p, g, m, v, v̂, b, x are n floats each (one parameter tensor, flattened).
//
// Adam / AdamW per element (t = the parameter's step; the caller folds it into the coefficients):
//   g ← g + λ₂·p;  p ← p·(1 − lr·λ);  m ← β₁·m + (1 − β₁)·g;  v ← β₂·v + (1 − β₂)·g·g;
//   v̂ ← max(v̂, v) (AMSGrad);  p ← p − (lr / (1 − β₁ᵗ))·m / (√v / √(1 − β₂ᵗ) + ε)
// SGD per element:
//   d ← g + λ·p;  b ← μ·b + (1 − τ)·d (b ← d on the first update);  d ← d + μ·b or d ← b;  p ← p − lr·d
//
// Exactness. nvcc would contract a·b + c into one fused multiply-add (one rounding instead of
// two), which the CPU kernel — compiled for baseline x86-64, which has no FMA — never does. So
// every operation is written with the round-to-nearest intrinsics (__fmul_rn, __fadd_rn,
// __fdiv_rn, __fsqrt_rn), which nvcc never contracts, in the CPU kernel's order: the GPU update is
// the CPU update, bit for bit.
//
// Algorithm: one thread per four elements (16-byte loads and stores) when every pointer is
// 16-byte aligned, the n % 4 tail one element per thread; grid-stride loops. Memory-bound: Adam
// moves 28 bytes per element (32 with AMSGrad).
//
// sum_of_squares: B = min(⌈n / 4096⌉, 1024) blocks of 256 threads, a function of n alone. Thread t
// of block b adds x_i² in fp64 over i = b·256 + t, + B·256, ... in increasing i; the block adds its
// threads' sums in a fixed tree into partial[b]; one block then adds the B partials in a fixed
// tree. Same n, same bits. (x² of a float is exact in fp64.)
#include "kernels/cuda/adam.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// ---- the per-element updates (the CPU kernel's operations, in its order) -------------------------

__device__ __forceinline__ void adam_element(float& p, float grad, float& m, float& v, float* v_max,
                                             const AdamArgs& c) {
  const float g = c.l2 != 0.0f ? __fadd_rn(grad, __fmul_rn(c.l2, p)) : grad;           // grad + λ₂·p
  if (c.decay != 1.0f) p = __fmul_rn(p, c.decay);                                      // p·(1 − lr·λ)
  m = __fadd_rn(__fmul_rn(m, c.beta1), __fmul_rn(c.one_minus_beta1, g));               // m·β₁ + (1 − β₁)·g
  v = __fadd_rn(__fmul_rn(v, c.beta2), __fmul_rn(__fmul_rn(c.one_minus_beta2, g), g)); // v·β₂ + ((1 − β₂)·g)·g
  float second = v;
  if (v_max) second = *v_max = *v_max < v ? v : *v_max; // std::max(v̂, v)
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(second), c.bias_correction2_sqrt), c.eps);
  p = __fadd_rn(p, __fdiv_rn(__fmul_rn(c.neg_step_size, m), denom)); // p + (−step·m)/denom
}

__device__ __forceinline__ void sgd_element(float& p, float grad, float* buf, const SgdArgs& c) {
  float d = c.weight_decay != 0.0f ? __fadd_rn(grad, __fmul_rn(c.weight_decay, p)) : grad; // grad + λ·p
  if (buf) {
    float& b = *buf;
    b = c.first ? d : __fadd_rn(__fmul_rn(b, c.momentum), __fmul_rn(c.one_minus_dampening, d));
    d = c.nesterov ? __fadd_rn(d, __fmul_rn(c.momentum, b)) : b;
  }
  p = __fadd_rn(p, __fmul_rn(c.neg_lr, d)); // p + (−lr)·d
}

// ---- the loops -------------------------------------------------------------------------------------

// Work item k < n/4 (kVec4) is the aligned group of elements 4k .. 4k + 3; the items after those
// are the remaining elements one by one. Without kVec4 every item is one element.
template <bool kVec4>
__host__ __device__ int64_t vector_groups(int64_t n) {
  return kVec4 ? n / 4 : 0;
}
template <bool kVec4>
int64_t work_items(int64_t n) {
  return vector_groups<kVec4>(n) + (n - 4 * vector_groups<kVec4>(n));
}

// Calls element(i) for every element i of the calling thread's work items, grid-stride: with
// kVec4 the four elements of a group are loaded by the caller's float4 path (group(k)).
template <bool kVec4, class Group, class Element>
__device__ void for_each_item(int64_t n, Group group, Element element) {
  const int64_t groups = vector_groups<kVec4>(n), items = groups + (n - 4 * groups);
  for (int64_t k = int64_t{blockIdx.x} * kThreads + threadIdx.x; k < items; k += int64_t{gridDim.x} * kThreads) {
    if (k < groups)
      group(k);
    else
      element(4 * groups + (k - groups));
  }
}

template <bool kVec4, bool kAmsgrad>
__global__ void __launch_bounds__(kThreads)
    adam_kernel(int64_t n, float* p, const float* g, float* m, float* v, float* v_max, AdamArgs c) {
  for_each_item<kVec4>(
      n,
      [&](int64_t k) {
        float4 p4 = reinterpret_cast<float4*>(p)[k], m4 = reinterpret_cast<float4*>(m)[k],
               v4 = reinterpret_cast<float4*>(v)[k];
        const float4 g4 = reinterpret_cast<const float4*>(g)[k];
        float4 vm4 = kAmsgrad ? reinterpret_cast<float4*>(v_max)[k] : make_float4(0, 0, 0, 0);
        adam_element(p4.x, g4.x, m4.x, v4.x, kAmsgrad ? &vm4.x : nullptr, c);
        adam_element(p4.y, g4.y, m4.y, v4.y, kAmsgrad ? &vm4.y : nullptr, c);
        adam_element(p4.z, g4.z, m4.z, v4.z, kAmsgrad ? &vm4.z : nullptr, c);
        adam_element(p4.w, g4.w, m4.w, v4.w, kAmsgrad ? &vm4.w : nullptr, c);
        reinterpret_cast<float4*>(p)[k] = p4;
        reinterpret_cast<float4*>(m)[k] = m4;
        reinterpret_cast<float4*>(v)[k] = v4;
        if constexpr (kAmsgrad) reinterpret_cast<float4*>(v_max)[k] = vm4;
      },
      [&](int64_t i) { adam_element(p[i], g[i], m[i], v[i], kAmsgrad ? v_max + i : nullptr, c); });
}

template <bool kVec4, bool kMomentum>
__global__ void __launch_bounds__(kThreads) sgd_kernel(int64_t n, float* p, const float* g, float* buf, SgdArgs c) {
  for_each_item<kVec4>(
      n,
      [&](int64_t k) {
        float4 p4 = reinterpret_cast<float4*>(p)[k];
        const float4 g4 = reinterpret_cast<const float4*>(g)[k];
        float4 b4 = kMomentum ? reinterpret_cast<float4*>(buf)[k] : make_float4(0, 0, 0, 0);
        sgd_element(p4.x, g4.x, kMomentum ? &b4.x : nullptr, c);
        sgd_element(p4.y, g4.y, kMomentum ? &b4.y : nullptr, c);
        sgd_element(p4.z, g4.z, kMomentum ? &b4.z : nullptr, c);
        sgd_element(p4.w, g4.w, kMomentum ? &b4.w : nullptr, c);
        reinterpret_cast<float4*>(p)[k] = p4;
        if constexpr (kMomentum) reinterpret_cast<float4*>(buf)[k] = b4;
      },
      [&](int64_t i) { sgd_element(p[i], g[i], kMomentum ? buf + i : nullptr, c); });
}

template <bool kVec4>
__global__ void __launch_bounds__(kThreads) scale_kernel(int64_t n, float* x, float s) {
  for_each_item<kVec4>(
      n,
      [&](int64_t k) {
        float4 x4 = reinterpret_cast<float4*>(x)[k];
        x4.x = __fmul_rn(x4.x, s), x4.y = __fmul_rn(x4.y, s), x4.z = __fmul_rn(x4.z, s), x4.w = __fmul_rn(x4.w, s);
        reinterpret_cast<float4*>(x)[k] = x4;
      },
      [&](int64_t i) { x[i] = __fmul_rn(x[i], s); });
}

// Launches kernel<kVec4> over n elements: kVec4 when every pointer is 16-byte aligned.
template <class Launch>
void launch_elementwise(int64_t n, bool aligned, Launch launch) {
  if (n <= 0) return;
  if (aligned)
    launch(std::true_type{}, blocks_for(work_items<true>(n), kThreads));
  else
    launch(std::false_type{}, blocks_for(work_items<false>(n), kThreads));
}

// ---- sum of squares -------------------------------------------------------------------------------

constexpr int kSumThreads = 256;
constexpr int kMaxSumBlocks = 1024;
constexpr int64_t kSumPerBlock = 4096; // elements per block before the block count saturates

__device__ double g_block_sums[kMaxSumBlocks];
__device__ double g_total;

// Σ over the block in a fixed tree (warp butterflies, then the warps' sums in order by thread 0).
template <int kBlockThreads>
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kBlockThreads / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlockThreads / 32; ++w) total += warp_sums[w];
  return total; // (in thread 0)
}

__global__ void __launch_bounds__(kSumThreads) block_squares_kernel(int64_t n, const float* x) {
  const int64_t stride = int64_t{gridDim.x} * kSumThreads;
  int64_t i = int64_t{blockIdx.x} * kSumThreads + threadIdx.x;
  double acc = 0.0;
  for (; i + 3 * stride < n; i += 4 * stride) { // four loads in flight, added in increasing i
    const float a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc += static_cast<double>(a) * a;
    acc += static_cast<double>(b) * b;
    acc += static_cast<double>(c) * c;
    acc += static_cast<double>(d) * d;
  }
  for (; i < n; i += stride) acc += static_cast<double>(x[i]) * x[i];
  const double total = block_sum<kSumThreads>(acc);
  if (threadIdx.x == 0) g_block_sums[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kMaxSumBlocks) total_kernel(int blocks) {
  const double total = block_sum<kMaxSumBlocks>(threadIdx.x < blocks ? g_block_sums[threadIdx.x] : 0.0);
  if (threadIdx.x == 0) g_total = total;
}

// acc ← (first ? 0 : acc) + w·g, each operation rounded once (no fused multiply-add), as the CPU.
__global__ void __launch_bounds__(kThreads)
    accumulate_kernel(int64_t n, float* acc, const float* g, float w, bool first) {
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const float base = first ? 0.0f : acc[i];
    acc[i] = g ? __fadd_rn(base, __fmul_rn(w, g[i])) : base;
  }
}

__global__ void __launch_bounds__(kThreads) divide_kernel(int64_t n, float* x, float s) {
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads)
    x[i] = __fdiv_rn(x[i], s);
}

unsigned grid_stride_blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 8));
}

} // namespace

void adam_update(const AdamArgs& c, float* p, const float* g, float* m, float* v, float* v_max) {
  const int64_t n = c.n;
  const bool aligned = aligned16(p) && aligned16(g) && aligned16(m) && aligned16(v) && (!v_max || aligned16(v_max));
  launch_elementwise(n, aligned, [&](auto vec4, unsigned grid) {
    constexpr bool kVec4 = decltype(vec4)::value;
    if (v_max)
      adam_kernel<kVec4, true><<<grid, kThreads, 0, stream()>>>(n, p, g, m, v, v_max, c);
    else
      adam_kernel<kVec4, false><<<grid, kThreads, 0, stream()>>>(n, p, g, m, v, nullptr, c);
    PILLARS_CUDA_LAUNCHED("adam_kernel");
  });
}

void sgd_update(const SgdArgs& c, float* p, const float* g, float* buf) {
  const int64_t n = c.n;
  const bool aligned = aligned16(p) && aligned16(g) && (!buf || aligned16(buf));
  launch_elementwise(n, aligned, [&](auto vec4, unsigned grid) {
    constexpr bool kVec4 = decltype(vec4)::value;
    if (buf)
      sgd_kernel<kVec4, true><<<grid, kThreads, 0, stream()>>>(n, p, g, buf, c);
    else
      sgd_kernel<kVec4, false><<<grid, kThreads, 0, stream()>>>(n, p, g, nullptr, c);
    PILLARS_CUDA_LAUNCHED("sgd_kernel");
  });
}

void scale(const ScaleArgs& a, float* x) {
  const int64_t n = a.n;
  const float s = a.s;
  launch_elementwise(n, aligned16(x), [&](auto vec4, unsigned grid) {
    scale_kernel<decltype(vec4)::value><<<grid, kThreads, 0, stream()>>>(n, x, s);
    PILLARS_CUDA_LAUNCHED("scale_kernel");
  });
}

void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc) {
  const int64_t n = a.n;
  if (n <= 0) return;
  accumulate_kernel<<<grid_stride_blocks(n), kThreads, 0, stream()>>>(n, acc, g, a.w, a.first);
  PILLARS_CUDA_LAUNCHED("accumulate_kernel");
}

void divide(const DivideArgs& a, float* x) {
  const int64_t n = a.n;
  if (n <= 0) return;
  divide_kernel<<<grid_stride_blocks(n), kThreads, 0, stream()>>>(n, x, a.s);
  PILLARS_CUDA_LAUNCHED("divide_kernel");
}

double sum_of_squares(const SumOfSquaresArgs& a, const float* x) {
  const int64_t n = a.n;
  if (n <= 0) return 0.0;
  const int blocks = static_cast<int>(std::clamp<int64_t>((n + kSumPerBlock - 1) / kSumPerBlock, 1, kMaxSumBlocks));
  block_squares_kernel<<<blocks, kSumThreads, 0, stream()>>>(n, x);
  PILLARS_CUDA_LAUNCHED("sum_of_squares block_squares_kernel");
  total_kernel<<<1, kMaxSumBlocks, 0, stream()>>>(blocks);
  PILLARS_CUDA_LAUNCHED("sum_of_squares total_kernel");
  double total = 0.0;
  PILLARS_CUDA_CHECK(cudaMemcpyFromSymbolAsync(&total, g_total, sizeof(double), 0, cudaMemcpyDeviceToHost, stream()));
  PILLARS_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return total;
}

} // namespace pillars::cuda
