// Dropout and masked_fill on the GPU (same functions as engine/ops/dropout.cpp).
//
// dropout: x (n) → y (n), any shape flattened. With the Philox stream of kernels/philox.h,
//   key = the op's seed + run seed,  element i sits at stream position s = rng_offset + i,
//   r = philox4x32_10(counter s / 4, key), u_i = (word s % 4 of r >> 8) · 2⁻²⁴ ∈ [0, 1),
//   y_i = x_i · (1 / (1 − p)) if u_i ≥ p, else 0           (p = 1: u < 1 always, so y = 0)
// bit for bit the CPU kernel's mask and values (u, the scale and the product are exact the same
// float operations). The run seed is read on the device, from DropoutArgs::run_seed (the
// executor's device word), so a captured CUDA graph draws a fresh mask at every replay.
// Algorithm: one thread per Philox call — four consecutive stream positions, i.e. four elements —
// with one 16-byte load and store when rng_offset % 4 == 0 and the pointers are aligned.
//
// masked_fill: x (...) f32, mask i32 broadcast to x's shape (aligned at the right),
//   y = mask != 0 ? value : x.
// Algorithm: x's axes are paired with the mask's strides (0 where the mask broadcasts), unit axes
// dropped and neighbors merged where the strides allow (a (B, 1, 1, T) mask on (B, H, T, T)
// becomes extents (B, H·T, T) with mask strides (T, 0, 1)); then one thread per four elements
// (when the innermost axis allows 16-byte accesses; else per element) finds its mask element with
// a few 32-bit divisions.
//
// Both kernels read element i before writing element i and touch nothing else, so y may alias x.
//
// The API is dropout.h; engine/ops/cuda/dropout.cu adapts the ops to it.
#include "kernels/cuda/dropout.h"

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "runtime/cuda_runtime.h"
#include "kernels/dims.h"
#include "kernels/philox.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// ---- dropout -------------------------------------------------------------------------------------

__device__ __forceinline__ float uniform_of(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Thread k makes Philox call k of the tensor: counter offset/4 + k, stream positions
// 4·(offset/4 + k) + lane, i.e. elements i = 4k + lane − offset % 4 (those in [0, n)).
// kVec4: offset % 4 == 0 and x, y 16-byte aligned, so the four elements are one aligned float4.
template <bool kVec4>
__global__ void __launch_bounds__(kThreads) dropout_kernel(DropoutArgs a, const float* x, float* y) {
  const uint64_t key = a.seed + (a.run_seed ? *a.run_seed : a.host_run_seed);
  const int64_t lead = static_cast<int64_t>(a.offset & 3); // stream positions before element 0 in call 0
  const int64_t calls = (lead + a.n + 3) / 4;
  for (int64_t k = int64_t{blockIdx.x} * kThreads + threadIdx.x; k < calls; k += int64_t{gridDim.x} * kThreads) {
    const Philox4 r = philox4x32_10((a.offset >> 2) + static_cast<uint64_t>(k), key);
    const int64_t first = 4 * k - lead; // element of word 0
    if (kVec4 && first + 3 < a.n) {
      const float4 v = reinterpret_cast<const float4*>(x)[k];
      float4 out;
      out.x = uniform_of(r.v[0]) >= a.p ? v.x * a.scale : 0.0f;
      out.y = uniform_of(r.v[1]) >= a.p ? v.y * a.scale : 0.0f;
      out.z = uniform_of(r.v[2]) >= a.p ? v.z * a.scale : 0.0f;
      out.w = uniform_of(r.v[3]) >= a.p ? v.w * a.scale : 0.0f;
      reinterpret_cast<float4*>(y)[k] = out;
    } else {
#pragma unroll
      for (int word = 0; word < 4; ++word) {
        const int64_t i = first + word;
        if (i >= 0 && i < a.n) y[i] = uniform_of(r.v[word]) >= a.p ? x[i] * a.scale : 0.0f;
      }
    }
  }
}

// ---- masked_fill -----------------------------------------------------------------------------------

constexpr int kMaxDims = 8;

// x viewed as `dims` axes (outermost first) with extents[], and the mask offset of each axis'
// step in mask_strides[] (0: the mask broadcasts along it).
struct BroadcastView {
  int dims = 0;
  uint32_t extents[kMaxDims];
  uint32_t mask_strides[kMaxDims];
  uint32_t inner_extent = 1, inner_mask_stride = 0; // of the innermost axis (1, 0 when there is none)
};

// Pairs x's axes with the mask's strides (mask aligned at the right), drops unit axes and merges
// an axis into its inner neighbor when the mask steps over them as over one axis.
BroadcastView broadcast_view(std::span<const int64_t> xs, std::span<const int64_t> ms) {
  const int rank = static_cast<int>(xs.size()), shift = rank - static_cast<int>(ms.size());
  int64_t ext[64], str[64];
  int dims = 0;
  int64_t mask_stride = 1; // the contiguous stride of mask axis a − shift
  PILLARS_CHECK(rank <= 64, "masked_fill: rank ", rank, " is too large for the CUDA kernel");
  for (int a = rank - 1; a >= 0; --a) { // innermost first; reversed below
    const int64_t extent = xs[static_cast<size_t>(a)];
    const int64_t mask_extent = a >= shift ? ms[static_cast<size_t>(a - shift)] : 1;
    const int64_t stride = mask_extent == 1 ? 0 : mask_stride;
    mask_stride *= mask_extent;
    if (extent == 1) continue;
    if (dims > 0 && stride == str[dims - 1] * ext[dims - 1]) {
      ext[dims - 1] *= extent; // the inner neighbor absorbs this axis
      continue;
    }
    ext[dims] = extent, str[dims] = stride, ++dims;
  }
  PILLARS_CHECK(dims <= kMaxDims, "masked_fill: x ", dims_str(xs), " with mask ", dims_str(ms), " needs more than ",
                kMaxDims, " axes in the CUDA kernel");
  BroadcastView v;
  v.dims = dims;
  for (int d = 0; d < dims; ++d) {
    v.extents[d] = static_cast<uint32_t>(ext[dims - 1 - d]);
    v.mask_strides[d] = static_cast<uint32_t>(str[dims - 1 - d]);
  }
  if (dims > 0) v.inner_extent = static_cast<uint32_t>(ext[0]), v.inner_mask_stride = static_cast<uint32_t>(str[0]);
  return v;
}

// The offset in the mask of flat element i of x: i decomposed over the view's axes, innermost
// first (constant indices only, so the view stays in registers).
__device__ __forceinline__ uint32_t mask_offset(const BroadcastView& v, uint32_t i) {
  uint32_t rest = i, offset = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d >= v.dims) continue;
    offset += (rest % v.extents[d]) * v.mask_strides[d];
    rest /= v.extents[d];
  }
  return offset;
}

// y[i] = mask[offset of i] != 0 ? value : x[i]. With kVec4 (the innermost axis a multiple of 4
// long, x and y 16-byte aligned) thread k takes elements 4k .. 4k + 3, which share their outer
// coordinates: one offset computation per four elements, the mask stepping by its innermost
// stride between them. The caller guarantees n, mask numel < 2³¹, so 32-bit indices (and the
// grid-stride step) cannot overflow.
template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    masked_fill_kernel(BroadcastView v, const float* x, const int32_t* mask, float* y, uint32_t n, float value) {
  constexpr uint32_t kPer = kVec4 ? 4 : 1;
  for (uint32_t k = blockIdx.x * kThreads + threadIdx.x; k < n / kPer; k += gridDim.x * kThreads) {
    const uint32_t offset = mask_offset(v, k * kPer);
    if constexpr (kVec4) {
      float4 q = reinterpret_cast<const float4*>(x)[k];
      const uint32_t step = v.inner_mask_stride;
      q.x = mask[offset] != 0 ? value : q.x;
      q.y = mask[offset + step] != 0 ? value : q.y;
      q.z = mask[offset + 2 * step] != 0 ? value : q.z;
      q.w = mask[offset + 3 * step] != 0 ? value : q.w;
      reinterpret_cast<float4*>(y)[k] = q;
    } else {
      const float xi = x[k];
      y[k] = mask[offset] != 0 ? value : xi;
    }
  }
}

} // namespace

void dropout(const DropoutArgs& a, const float* x, float* y) {
  if (a.n == 0) return;
  const int64_t calls = (static_cast<int64_t>(a.offset & 3) + a.n + 3) / 4;
  if (a.offset % 4 == 0 && aligned16(x) && aligned16(y))
    dropout_kernel<true><<<blocks_for(calls, kThreads), kThreads, 0, stream()>>>(a, x, y);
  else
    dropout_kernel<false><<<blocks_for(calls, kThreads), kThreads, 0, stream()>>>(a, x, y);
  PILLARS_CUDA_LAUNCHED("dropout_kernel");
}

void masked_fill(const MaskedFillArgs& a, const float* xp, const int32_t* mp, float* yp) {
  const std::span<const int64_t> x_dims = a.x_dims, mask_dims = a.mask_dims;
  const float value = a.value;
  const int64_t n = dims_count(x_dims);
  if (n == 0) return;
  PILLARS_CHECK(n <= INT_MAX && dims_count(mask_dims) <= INT_MAX,
                "masked_fill: tensors of 2^31 elements or more are not supported by the CUDA kernel");
  const BroadcastView v = broadcast_view(x_dims, mask_dims);
  if (v.inner_extent % 4 == 0 && aligned16(xp) && aligned16(yp))
    masked_fill_kernel<true><<<blocks_for(n / 4, kThreads), kThreads, 0, stream()>>>(v, xp, mp, yp, uint32_t(n), value);
  else
    masked_fill_kernel<false><<<blocks_for(n, kThreads), kThreads, 0, stream()>>>(v, xp, mp, yp, uint32_t(n), value);
  PILLARS_CUDA_LAUNCHED("masked_fill_kernel");
}

} // namespace pillars::cuda
