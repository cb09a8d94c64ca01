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
#include "engine/ops/common.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

enum class Binary { add, sub, mul, div };
enum class Unary { scale, add_scalar, exp, log, sqrt, tanh, relu, gelu };

template <Binary K> __device__ __forceinline__ float apply(float a, float b) {
  if constexpr (K == Binary::add) return a + b;
  else if constexpr (K == Binary::sub) return a - b;
  else if constexpr (K == Binary::mul) return a * b;
  else return a / b;
}

// GELU with the exact normal CDF Φ(x) = ½(1 + erf(x/√2)), as on the CPU.
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_grad(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

template <Unary K> __device__ __forceinline__ float apply(float x, float s, float c) {
  if constexpr (K == Unary::scale) return s * x;
  else if constexpr (K == Unary::add_scalar) return x + c;
  else if constexpr (K == Unary::exp) return expf(x);
  else if constexpr (K == Unary::log) return logf(x);
  else if constexpr (K == Unary::sqrt) return sqrtf(x);
  else if constexpr (K == Unary::tanh) return tanhf(x);
  else if constexpr (K == Unary::relu) return x > 0.0f ? x : 0.0f;
  else return gelu(x);
}

// Grid-stride loop over n elements.
#define PILLARS_FOR_EACH(i, n) \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

unsigned grid_for(int64_t n) {
  const int64_t cap = static_cast<int64_t>(device_properties().multiProcessorCount) * 16; // enough blocks to fill the chip
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks_for(n, kThreads), cap)));
}

// Strides of an operand in the output's coordinate system (0 on broadcast axes).
struct Broadcast {
  int rank = 0;
  int64_t out_extent[kMaxRank];
  int64_t a_stride[kMaxRank], b_stride[kMaxRank];
};

void fill_strides(const Shape& s, const Shape& out, int64_t* stride) {
  const int shift = static_cast<int>(out.size() - s.size());
  int64_t st = 1;
  for (int ax = static_cast<int>(out.size()) - 1; ax >= 0; --ax) {
    const int sa = ax - shift;
    if (sa < 0 || s[static_cast<size_t>(sa)] == 1) stride[ax] = 0;
    else stride[ax] = st;
    if (sa >= 0) st *= s[static_cast<size_t>(sa)];
  }
}

template <Binary K> __global__ void binary_same_shape(const float* a, const float* b, float* out, int64_t n) {
  PILLARS_FOR_EACH(i, n) out[i] = apply<K>(a[i], b[i]);
}
// b repeats every nb elements of a (a bias over rows), or a does (b_repeats = false).
template <Binary K> __global__ void binary_repeating(const float* a, const float* b, float* out, int64_t n, int64_t period,
                                                     bool b_repeats) {
  PILLARS_FOR_EACH(i, n) out[i] = b_repeats ? apply<K>(a[i], b[i % period]) : apply<K>(a[i % period], b[i]);
}
template <Binary K> __global__ void binary_general(const float* a, const float* b, float* out, int64_t n, Broadcast bc) {
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
bool is_suffix(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  return std::equal(small.begin(), small.end(), big.end() - static_cast<std::ptrdiff_t>(small.size()));
}

template <Binary K> void binary(const KernelContext& c) {
  const Tensor &A = c.in[0], &B = c.in[1];
  Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  const float *a = A.data<float>(), *b = B.data<float>();
  float* y = out.data<float>();
  if (A.shape() == B.shape()) {
    binary_same_shape<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n);
  } else if (A.shape() == out.shape() && is_suffix(B.shape(), out.shape())) {
    binary_repeating<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, B.numel(), true);
  } else if (B.shape() == out.shape() && is_suffix(A.shape(), out.shape())) {
    binary_repeating<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, A.numel(), false);
  } else {
    PILLARS_CHECK(out.rank() <= kMaxRank, c.node.op->name, ": rank ", out.rank(), " > ", kMaxRank, " on the GPU");
    Broadcast bc;
    bc.rank = out.rank();
    for (int ax = 0; ax < bc.rank; ++ax) bc.out_extent[ax] = out.shape()[static_cast<size_t>(ax)];
    fill_strides(A.shape(), out.shape(), bc.a_stride);
    fill_strides(B.shape(), out.shape(), bc.b_stride);
    binary_general<K><<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n, bc);
  }
  PILLARS_CUDA_LAUNCHED(c.node.op->name);
}

template <Unary K> __global__ void unary_kernel(const float* x, float* y, int64_t n, float s, float cst) {
  PILLARS_FOR_EACH(i, n) y[i] = apply<K>(x[i], s, cst);
}
template <Unary K> void unary(const KernelContext& c) {
  const int64_t n = c.out[0].numel();
  if (n == 0) return;
  unary_kernel<K><<<grid_for(n), kThreads, 0, stream()>>>(c.in[0].data<float>(), c.out[0].data<float>(), n, c.node.attrs.scale,
                                                          c.node.attrs.value);
  PILLARS_CUDA_LAUNCHED(c.node.op->name);
}

// relu_backward reads ReLU's output y (y > 0 ⇔ x > 0); gelu_backward reads the input x.
template <Unary K> __global__ void activation_backward_kernel(const float* dy, const float* x, float* dx, int64_t n) {
  PILLARS_FOR_EACH(i, n) {
    if constexpr (K == Unary::relu) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
    else dx[i] = dy[i] * gelu_grad(x[i]);
  }
}
template <Unary K> void activation_backward(const KernelContext& c) {
  const int64_t n = c.out[0].numel();
  if (n == 0) return;
  activation_backward_kernel<K><<<grid_for(n), kThreads, 0, stream()>>>(c.in[0].data<float>(), c.in[1].data<float>(),
                                                                        c.out[0].data<float>(), n);
  PILLARS_CUDA_LAUNCHED(c.node.op->name);
}

__global__ void fill_kernel(float* y, int64_t n, float value) {
  PILLARS_FOR_EACH(i, n) y[i] = value;
}

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
  int rank = 0;            // of x
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

void op_add(const KernelContext& c) { binary<Binary::add>(c); }
void op_sub(const KernelContext& c) { binary<Binary::sub>(c); }
void op_mul(const KernelContext& c) { binary<Binary::mul>(c); }
void op_div(const KernelContext& c) { binary<Binary::div>(c); }
void op_scale(const KernelContext& c) { unary<Unary::scale>(c); }
void op_add_scalar(const KernelContext& c) { unary<Unary::add_scalar>(c); }
void op_exp(const KernelContext& c) { unary<Unary::exp>(c); }
void op_log(const KernelContext& c) { unary<Unary::log>(c); }
void op_sqrt(const KernelContext& c) { unary<Unary::sqrt>(c); }
void op_tanh(const KernelContext& c) { unary<Unary::tanh>(c); }
void op_relu(const KernelContext& c) { unary<Unary::relu>(c); }
void op_gelu(const KernelContext& c) { unary<Unary::gelu>(c); }
void op_relu_backward(const KernelContext& c) { activation_backward<Unary::relu>(c); }
void op_gelu_backward(const KernelContext& c) { activation_backward<Unary::gelu>(c); }

void op_fill(const KernelContext& c) {
  const int64_t n = c.out[0].numel();
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream()>>>(c.out[0].data<float>(), n, c.node.attrs.value);
  PILLARS_CUDA_LAUNCHED("fill");
}

void op_sum_to(const KernelContext& c) {
  const Shape &xs = c.in[0].shape(), &ys = c.out[0].shape();
  const float* x = c.in[0].data<float>();
  float* y = c.out[0].data<float>();
  const int64_t outputs = c.out[0].numel();
  if (outputs == 0) return;
  if (c.in[0].numel() == 0) {
    PILLARS_CUDA_CHECK(cudaMemsetAsync(y, 0, c.out[0].nbytes(), stream()));
    return;
  }
  if (is_suffix(ys, xs)) { // y is x's trailing axes: sum over rows
    const int64_t cols = outputs, rows = c.in[0].numel() / cols;
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

void op_broadcast_to(const KernelContext& c) {
  const Tensor& x = c.in[0];
  Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  PILLARS_CHECK(out.rank() <= kMaxRank, "broadcast_to: rank ", out.rank(), " > ", kMaxRank, " on the GPU");
  Broadcast bc;
  bc.rank = out.rank();
  for (int ax = 0; ax < bc.rank; ++ax) bc.out_extent[ax] = out.shape()[static_cast<size_t>(ax)], bc.b_stride[ax] = 0;
  fill_strides(x.shape(), out.shape(), bc.a_stride);
  broadcast_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x.data<float>(), out.data<float>(), n, bc);
  PILLARS_CUDA_LAUNCHED("broadcast_to");
}

} // namespace pillars::cuda
