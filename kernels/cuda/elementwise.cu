// Elementwise ops on the GPU: broadcast binary ops, unary maps, activation gradients, fill,
// sum_to (the reduction that undoes a broadcast) and broadcast_to.
//
//   binary   a (broadcast to out), b (broadcast to out) → out;   out = a ∘ b, ∘ ∈ {+, −, ·, /}
//   unary    x (n) → y (n);  y = s·x | x + c | eˣ | ln x | √x | tanh x | max(x, 0) | x Φ(x)
//   backward dy, x (n) → dx (n);  dx = dy·[x > 0] | dy·(Φ(x) + x φ(x))
//   sum_to   x (shape X) → y (shape Y), Y broadcasts to X: y = Σ over the broadcast axes
//
// Broadcasting is by strides: each output index is split into coordinates and each operand's
// offset is Σ coord·stride with stride 0 on its broadcast axes (numpy rules, aligned at the right).
// Two fast paths cover almost every call of a transformer step: equal shapes (a flat loop) and
// a bias-like b that repeats along the rows of a (b's offset = i mod |b|).
// All these ops may run in place (OpDef::inplace): element i is read before element i is written.
// The API is elementwise.h; engine/ops/cuda/elementwise.cu adapts the ops to it.
#include "kernels/cuda/elementwise.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "kernels/bf16_bits.h"
#include "runtime/cuda_runtime.h"
#include "kernels/dims.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

template <Binary K>
__device__ __forceinline__ float apply(float a, float b) {
  if constexpr (K == Binary::add)
    return a + b;
  else if constexpr (K == Binary::sub)
    return a - b;
  else if constexpr (K == Binary::mul)
    return a * b;
  else
    return a / b;
}

// GELU with the exact normal CDF Φ(x) = ½(1 + erf(x/√2)), as on the CPU.
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_grad(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

template <Unary K>
__device__ __forceinline__ float apply(float x, float s, float c) {
  if constexpr (K == Unary::scale)
    return s * x;
  else if constexpr (K == Unary::add_scalar)
    return x + c;
  else if constexpr (K == Unary::exp)
    return expf(x);
  else if constexpr (K == Unary::log)
    return logf(x);
  else if constexpr (K == Unary::sqrt)
    return sqrtf(x);
  else if constexpr (K == Unary::tanh)
    return tanhf(x);
  else if constexpr (K == Unary::relu)
    return x > 0.0f ? x : 0.0f;
  else
    return gelu(x);
}

// Grid-stride loop over n elements.
#define PILLARS_FOR_EACH(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

unsigned grid_for(int64_t n) {
  const int64_t cap =
      static_cast<int64_t>(device_properties().multiProcessorCount) * 16; // enough blocks to fill the chip
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks_for(n, kThreads), cap)));
}

// Strides of an operand in the output's coordinate system (0 on broadcast axes).
struct Broadcast {
  int rank = 0;
  int64_t out_extent[kMaxRank];
  int64_t a_stride[kMaxRank], b_stride[kMaxRank];
};

void fill_strides(std::span<const int64_t> s, std::span<const int64_t> out, int64_t* stride) {
  const int shift = static_cast<int>(out.size() - s.size());
  int64_t st = 1;
  for (int ax = static_cast<int>(out.size()) - 1; ax >= 0; --ax) {
    const int sa = ax - shift;
    if (sa < 0 || s[static_cast<size_t>(sa)] == 1)
      stride[ax] = 0;
    else
      stride[ax] = st;
    if (sa >= 0) st *= s[static_cast<size_t>(sa)];
  }
}

template <Binary K>
__global__ void binary_same_shape(const float* a, const float* b, float* out, int64_t n) {
  PILLARS_FOR_EACH(i, n) out[i] = apply<K>(a[i], b[i]);
}
// b repeats every nb elements of a (a bias over rows), or a does (b_repeats = false).
template <Binary K>
__global__ void binary_repeating(const float* a, const float* b, float* out, int64_t n, int64_t period,
                                 bool b_repeats) {
  PILLARS_FOR_EACH(i, n) out[i] = b_repeats ? apply<K>(a[i], b[i % period]) : apply<K>(a[i % period], b[i]);
}
template <Binary K>
__global__ void binary_general(const float* a, const float* b, float* out, int64_t n, Broadcast bc) {
  PILLARS_FOR_EACH(i, n) {
    int64_t rem = i, oa = 0, ob = 0;
    for (int ax = bc.rank - 1; ax >= 0; --ax) {
      const int64_t coord = rem % bc.out_extent[ax];
      rem /= bc.out_extent[ax];
      oa += coord * bc.a_stride[ax];
      ob += coord * bc.b_stride[ax];
    }
    out[i] = apply<K>(a[oa], b[ob]);
  }
}

// y = x broadcast to y's shape: a gather through x's strides (0 on broadcast axes).
__global__ void broadcast_kernel(const float* x, float* out, int64_t n, Broadcast bc) {
  PILLARS_FOR_EACH(i, n) {
    int64_t rem = i, ox = 0;
    for (int ax = bc.rank - 1; ax >= 0; --ax) {
      ox += (rem % bc.out_extent[ax]) * bc.a_stride[ax];
      rem /= bc.out_extent[ax];
    }
    out[i] = x[ox];
  }
}

// True when `small` equals the trailing axes of `big` (so it repeats every numel(small) elements).
bool is_suffix(std::span<const int64_t> small, std::span<const int64_t> big) {
  if (small.size() > big.size()) return false;
  return std::equal(small.begin(), small.end(), big.end() - static_cast<std::ptrdiff_t>(small.size()));
}

// Equal extents (what == says of two shapes).
bool same_dims(std::span<const int64_t> a, std::span<const int64_t> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

template <Binary K>
void binary(const float* a, std::span<const int64_t> a_dims, const float* b, std::span<const int64_t> b_dims, float* y,
            std::span<const int64_t> out_dims, const char* name) {
  const int64_t n = dims_count(out_dims);
  if (n == 0) return;
  if (same_dims(a_dims, b_dims)) {
    binary_same_shape<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n);
  } else if (same_dims(a_dims, out_dims) && is_suffix(b_dims, out_dims)) {
    binary_repeating<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, dims_count(b_dims), true);
  } else if (same_dims(b_dims, out_dims) && is_suffix(a_dims, out_dims)) {
    binary_repeating<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, dims_count(a_dims), false);
  } else {
    const int rank = static_cast<int>(out_dims.size());
    PILLARS_CHECK(rank <= kMaxRank, name, ": rank ", rank, " > ", kMaxRank, " on the GPU");
    Broadcast bc;
    bc.rank = rank;
    for (int ax = 0; ax < bc.rank; ++ax) bc.out_extent[ax] = out_dims[static_cast<size_t>(ax)];
    fill_strides(a_dims, out_dims, bc.a_stride);
    fill_strides(b_dims, out_dims, bc.b_stride);
    binary_general<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, bc);
  }
  PILLARS_CUDA_LAUNCHED(name);
}

template <Unary K>
__global__ void unary_kernel(const float* x, float* y, int64_t n, float s, float cst) {
  PILLARS_FOR_EACH(i, n) y[i] = apply<K>(x[i], s, cst);
}
template <Unary K>
void unary(const float* x, float* y, int64_t n, float s, float cst, const char* name) {
  if (n == 0) return;
  unary_kernel<K><<<grid_for(n), kThreads, 0, stream()>>>(x, y, n, s, cst);
  PILLARS_CUDA_LAUNCHED(name);
}

// relu_backward reads ReLU's output y (y > 0 ⇔ x > 0); gelu_backward reads the input x.
template <Unary K>
__global__ void activation_backward_kernel(const float* dy, const float* x, float* dx, int64_t n) {
  PILLARS_FOR_EACH(i, n) {
    if constexpr (K == Unary::relu)
      dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
    else
      dx[i] = dy[i] * gelu_grad(x[i]);
  }
}
template <Unary K>
void activation_backward_impl(const float* dy, const float* x, float* dx, int64_t n, const char* name) {
  if (n == 0) return;
  activation_backward_kernel<K><<<grid_for(n), kThreads, 0, stream()>>>(dy, x, dx, n);
  PILLARS_CUDA_LAUNCHED(name);
}

__global__ void leaky_relu_kernel(const float* x, float* y, int64_t n, float slope) {
  PILLARS_FOR_EACH(i, n) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}
__global__ void leaky_relu_backward_kernel(const float* dy, const float* x, float* dx, int64_t n, float slope) {
  PILLARS_FOR_EACH(i, n) dx[i] = x[i] > 0.0f ? dy[i] : slope * dy[i];
}

__global__ void fill_kernel(float* y, int64_t n, float value) { PILLARS_FOR_EACH(i, n) y[i] = value; }

// ---- sum_to -------------------------------------------------------------------------------------
// Rows case, the bias gradient: x (R, C) → y (C). A block owns 32 columns; its 8 warps' lanes
// each sum every 8th row of one column (coalesced across the lanes), then the 8 partial sums are
// added in shared memory in a fixed order: deterministic.
__global__ void sum_rows_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  __shared__ float partial[8][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float acc = 0.0f;
  if (col < cols)
    for (int64_t r = threadIdx.y; r < rows; r += 8) acc += x[r * cols + col];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += partial[k][threadIdx.x];
    y[col] = total;
  }
}

// General case: one warp per output element; its lanes stride over the reduced elements, whose
// offsets in x come from the reduced axes' extents and strides; a warp shuffle sums the lanes.
struct SumTo {
  int rank = 0; // of x
  int64_t x_stride[kMaxRank];
  int64_t kept_extent[kMaxRank], kept_stride[kMaxRank]; // axes kept in y (extent 1 where reduced)
  int64_t red_extent[kMaxRank];                         // axes reduced (extent 1 where kept)
  int64_t reduced_count = 1;
};
__global__ void sum_to_general_kernel(const float* x, float* y, int64_t outputs, SumTo st) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= outputs) return;
  int64_t rem = warp, base = 0;
  for (int ax = st.rank - 1; ax >= 0; --ax) {
    const int64_t coord = rem % st.kept_extent[ax];
    rem /= st.kept_extent[ax];
    base += coord * st.x_stride[ax];
  }
  float acc = 0.0f;
  for (int64_t r = lane; r < st.reduced_count; r += 32) {
    int64_t rr = r, off = base;
    for (int ax = st.rank - 1; ax >= 0; --ax) {
      const int64_t coord = rr % st.red_extent[ax];
      rr /= st.red_extent[ax];
      off += coord * st.x_stride[ax];
    }
    acc += x[off];
  }
  for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
  if (lane == 0) y[warp] = acc;
}

} // namespace

void binary_broadcast(const BinaryArgs& args, const float* a, const float* b, float* out) {
  const Binary kind = args.kind;
  const std::span<const int64_t> a_dims = args.a_dims, b_dims = args.b_dims, out_dims = args.out_dims;
  const char* name = args.name;
  switch (kind) {
    case Binary::add:
      return binary<Binary::add>(a, a_dims, b, b_dims, out, out_dims, name);
    case Binary::sub:
      return binary<Binary::sub>(a, a_dims, b, b_dims, out, out_dims, name);
    case Binary::mul:
      return binary<Binary::mul>(a, a_dims, b, b_dims, out, out_dims, name);
    case Binary::div:
      return binary<Binary::div>(a, a_dims, b, b_dims, out, out_dims, name);
  }
}

void unary_map(const UnaryArgs& a, const float* x, float* y) {
  const Unary kind = a.kind;
  const int64_t n = a.n;
  const float s = a.s, c = a.c;
  const char* name = a.name;
  switch (kind) {
    case Unary::scale:
      return unary<Unary::scale>(x, y, n, s, c, name);
    case Unary::add_scalar:
      return unary<Unary::add_scalar>(x, y, n, s, c, name);
    case Unary::exp:
      return unary<Unary::exp>(x, y, n, s, c, name);
    case Unary::log:
      return unary<Unary::log>(x, y, n, s, c, name);
    case Unary::sqrt:
      return unary<Unary::sqrt>(x, y, n, s, c, name);
    case Unary::tanh:
      return unary<Unary::tanh>(x, y, n, s, c, name);
    case Unary::relu:
      return unary<Unary::relu>(x, y, n, s, c, name);
    case Unary::gelu:
      return unary<Unary::gelu>(x, y, n, s, c, name);
  }
}

void activation_backward(const ActivationBackwardArgs& a, const float* dy, const float* x, float* dx) {
  if (a.kind == Unary::relu)
    activation_backward_impl<Unary::relu>(dy, x, dx, a.n, a.name);
  else
    activation_backward_impl<Unary::gelu>(dy, x, dx, a.n, a.name);
}

void leaky_relu(const LeakyReluArgs& a, const float* x, float* y) {
  const int64_t n = a.n;
  const float slope = a.slope;
  if (n == 0) return;
  leaky_relu_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, y, n, slope);
  PILLARS_CUDA_LAUNCHED("leaky_relu");
}

void leaky_relu_backward(const LeakyReluArgs& a, const float* dy, const float* x, float* dx) {
  const int64_t n = a.n;
  const float slope = a.slope;
  if (n == 0) return;
  leaky_relu_backward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dy, x, dx, n, slope);
  PILLARS_CUDA_LAUNCHED("leaky_relu_backward");
}

void fill(const FillArgs& a, float* y) {
  const int64_t n = a.n;
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream()>>>(y, n, a.value);
  PILLARS_CUDA_LAUNCHED("fill");
}

void sum_to(const SumToArgs& a, const float* x, float* y) {
  const std::span<const int64_t> xs = a.x_dims, ys = a.y_dims;
  const int64_t outputs = dims_count(ys);
  if (outputs == 0) return;
  if (dims_count(xs) == 0) {
    PILLARS_CUDA_CHECK(cudaMemsetAsync(y, 0, static_cast<size_t>(outputs) * sizeof(float), stream()));
    return;
  }
  if (is_suffix(ys, xs)) { // y is x's trailing axes: sum over rows
    const int64_t cols = outputs, rows = dims_count(xs) / cols;
    sum_rows_kernel<<<blocks_for(cols, 32), dim3(32, 8), 0, stream()>>>(x, y, rows, cols);
    PILLARS_CUDA_LAUNCHED("sum_to (rows)");
    return;
  }
  PILLARS_CHECK(xs.size() <= kMaxRank, "sum_to: rank ", xs.size(), " > ", kMaxRank, " on the GPU");
  SumTo st;
  st.rank = static_cast<int>(xs.size());
  const int shift = st.rank - static_cast<int>(ys.size());
  int64_t stride = 1;
  for (int ax = st.rank - 1; ax >= 0; --ax) {
    st.x_stride[ax] = stride;
    stride *= xs[static_cast<size_t>(ax)];
    const bool kept = ax >= shift && ys[static_cast<size_t>(ax - shift)] == xs[static_cast<size_t>(ax)];
    st.kept_extent[ax] = kept ? xs[static_cast<size_t>(ax)] : 1;
    st.red_extent[ax] = kept ? 1 : xs[static_cast<size_t>(ax)];
    st.reduced_count *= st.red_extent[ax];
  }
  sum_to_general_kernel<<<blocks_for(outputs * 32, kThreads), kThreads, 0, stream()>>>(x, y, outputs, st);
  PILLARS_CUDA_LAUNCHED("sum_to");
}

void broadcast_to(const BroadcastToArgs& a, const float* x, float* y) {
  const std::span<const int64_t> x_dims = a.x_dims, y_dims = a.y_dims;
  const int64_t n = dims_count(y_dims);
  if (n == 0) return;
  const int rank = static_cast<int>(y_dims.size());
  PILLARS_CHECK(rank <= kMaxRank, "broadcast_to: rank ", rank, " > ", kMaxRank, " on the GPU");
  Broadcast bc;
  bc.rank = rank;
  for (int ax = 0; ax < bc.rank; ++ax) bc.out_extent[ax] = y_dims[static_cast<size_t>(ax)], bc.b_stride[ax] = 0;
  fill_strides(x_dims, y_dims, bc.a_stride);
  broadcast_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, y, n, bc);
  PILLARS_CUDA_LAUNCHED("broadcast_to");
}

namespace {

// The CPU's rounding, on the bit pattern (kernels/bf16_bits.h), not __float2bfloat16_rn: that gives
// the same bits for numbers, but its NaN bits are not the CPU's (cuda_bf16.hpp's own pre-sm_80 path
// returns 0x7fff; the PTX spec leaves cvt.rn.bf16.f32's open).
__global__ void f32_to_bf16_kernel(const float* x, uint16_t* y, int64_t n) {
  PILLARS_FOR_EACH(i, n) y[i] = bf16_bits_of_f32_bits(__float_as_uint(x[i]));
}
__global__ void bf16_to_f32_kernel(const __nv_bfloat16* x, float* y, int64_t n) {
  PILLARS_FOR_EACH(i, n) y[i] = __bfloat162float(x[i]);
}

} // namespace

void f32_to_bf16(const CastArgs& a, const float* x, uint16_t* y) {
  const int64_t n = a.n;
  if (n == 0) return;
  f32_to_bf16_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, y, n);
  PILLARS_CUDA_LAUNCHED("f32_to_bf16");
}

void bf16_to_f32(const CastArgs& a, const uint16_t* x, float* y) {
  const int64_t n = a.n;
  if (n == 0) return;
  bf16_to_f32_kernel<<<grid_for(n), kThreads, 0, stream()>>>(reinterpret_cast<const __nv_bfloat16*>(x), y, n);
  PILLARS_CUDA_LAUNCHED("bf16_to_f32");
}

} // namespace pillars::cuda
