// The Gram matrix of per-head feature maps on the GPU (GHT's HUDS and GCT input; the same function
// as head_gram in engine/ops/head_gram.cpp).
//
// Shapes: x (B, T, H, D) f32 — token t = b·T + s, head h, feature d —, lengths i32 (B) or none,
// G (H, H), dG (H, H), dx (B, T, H, D). Token t is valid when s < lengths[b] (all, without lengths).
//   forward   G[i, j] = Σ_{valid t} Σ_d x[t, i, d] · x[t, j, d]
//   backward  dx[t, i, :] = Σ_j (dG + dGᵀ)[i, j] · x[t, j, :]   for valid t, else 0
//
// Forward algorithm, deterministic (a fixed summation order, whatever the launch):
//   1. one block per chunk of kChunk tokens. Its threads split into P = H(H+1)/2 pair slots (the
//      upper triangle i ≤ j) × L lanes; lane l takes tokens l, l + L, ... of the chunk, forms each
//      token's dot product in fp32 (D terms, as the CPU does) and adds it to a double. The L lane
//      sums of a pair are then added in lane order through shared memory into the chunk's partial
//      (chunks × P doubles in the op's workspace).
//   2. one thread per pair adds the chunk partials in chunk order and writes G[i, j] = G[j, i].
// The CPU adds tokens in order within chunks of its own size, so the two agree to rounding of the
// double sums, i.e. exactly after the final rounding to float in all but rare ties.
//
// Backward: one thread per element of dx, a loop over the H heads j (H ≤ 64 in practice).
// Lengths outside [0, T] are an error on the CPU; here they are clamped by the comparison.
//
// The API is head_gram.h; engine/ops/cuda/head_gram.cu adapts the ops to it.
#include "kernels/cuda/head_gram.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 256; // tokens per block of the forward

struct Gram {
  int64_t B, T, H, D;
  const int32_t* lengths; // device, nullable
  __device__ bool valid(int64_t t) const { return !lengths || t % T < lengths[t / T]; }
};

// Pair slot p of the upper triangle → (i, j), row by row: (0,0) (0,1) ... (0,H−1) (1,1) ...
__device__ void pair_of(int64_t p, int64_t H, int64_t& i, int64_t& j) {
  i = 0;
  while (p >= H - i) p -= H - i, ++i;
  j = i + p;
}

// Grid: one block per chunk. partial: (chunks, P) doubles.
__global__ void __launch_bounds__(kThreads) gram_partial_kernel(Gram g, const float* x, double* partial) {
  extern __shared__ double lane_sums[]; // (lanes, P)
  const int64_t P = g.H * (g.H + 1) / 2;
  const int64_t lanes = kThreads / P > 0 ? kThreads / P : 1;
  const int64_t t0 = int64_t{blockIdx.x} * kChunk, t1 = min(t0 + kChunk, g.B * g.T);
  // Threads beyond lanes·P idle in the sums; with P > kThreads a thread takes several pairs.
  for (int64_t slot = threadIdx.x; slot < lanes * P; slot += kThreads) {
    const int64_t p = slot % P, lane = slot / P;
    int64_t i, j;
    pair_of(p, g.H, i, j);
    double sum = 0.0;
    for (int64_t t = t0 + lane; t < t1; t += lanes) {
      if (!g.valid(t)) continue;
      const float* xi = x + (t * g.H + i) * g.D;
      const float* xj = x + (t * g.H + j) * g.D;
      float dot = 0.0f;
      for (int64_t d = 0; d < g.D; ++d) dot = fmaf(xi[d], xj[d], dot);
      sum += dot;
    }
    lane_sums[lane * P + p] = sum;
  }
  __syncthreads();
  for (int64_t p = threadIdx.x; p < P; p += kThreads) {
    double sum = 0.0;
    for (int64_t lane = 0; lane < lanes; ++lane) sum += lane_sums[lane * P + p];
    partial[int64_t{blockIdx.x} * P + p] = sum;
  }
}

__global__ void gram_reduce_kernel(const double* partial, int64_t chunks, int64_t H, float* G) {
  const int64_t P = H * (H + 1) / 2;
  const int64_t p = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (p >= P) return;
  double sum = 0.0;
  for (int64_t k = 0; k < chunks; ++k) sum += partial[k * P + p];
  int64_t i, j;
  pair_of(p, H, i, j);
  G[i * H + j] = G[j * H + i] = static_cast<float>(sum);
}

// One thread per dx element (t, i, d).
__global__ void gram_backward_kernel(Gram g, const float* x, const float* dG, float* dx) {
  const int64_t n = g.B * g.T * g.H * g.D;
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t d = e % g.D, i = (e / g.D) % g.H, t = e / (g.D * g.H);
    float acc = 0.0f;
    if (g.valid(t)) {
      const float* xt = x + t * g.H * g.D;
      for (int64_t j = 0; j < g.H; ++j) acc += (dG[i * g.H + j] + dG[j * g.H + i]) * xt[j * g.D + d];
    }
    dx[e] = acc;
  }
}

int64_t chunks_of(int64_t B, int64_t T) { return (B * T + kChunk - 1) / kChunk; }
int64_t pairs_of(int64_t H) { return H * (H + 1) / 2; }
size_t lane_sums_bytes(int64_t H) {
  const int64_t P = pairs_of(H), lanes = kThreads / P > 0 ? kThreads / P : 1;
  return static_cast<size_t>(lanes * P) * sizeof(double);
}

} // namespace

// workspace: (chunks, P) doubles
void head_gram(const HeadGramArgs& a, const float* x, const int32_t* lengths, float* G, void* workspace) {
  const int64_t B = a.B, T = a.T, H = a.H, D = a.D;
  const Gram g{B, T, H, D, lengths};
  const int64_t chunks = chunks_of(B, T);
  if (chunks == 0 || g.D == 0) {
    PILLARS_CUDA_CHECK(cudaMemsetAsync(G, 0, static_cast<size_t>(H * H) * sizeof(float), stream()));
    return;
  }
  const size_t shared = lane_sums_bytes(g.H);
  PILLARS_CHECK(shared <= 48 * 1024, "head_gram (cuda): ", g.H, " heads need more shared memory than a block has");
  double* partial = static_cast<double*>(workspace);
  gram_partial_kernel<<<static_cast<unsigned>(chunks), kThreads, shared, stream()>>>(g, x, partial);
  PILLARS_CUDA_LAUNCHED("head_gram gram_partial_kernel");
  gram_reduce_kernel<<<blocks_for(pairs_of(g.H), 64), 64, 0, stream()>>>(partial, chunks, g.H, G);
  PILLARS_CUDA_LAUNCHED("head_gram gram_reduce_kernel");
}

size_t head_gram_workspace(const HeadGramArgs& a) {
  return static_cast<size_t>(chunks_of(a.B, a.T) * pairs_of(a.H)) * sizeof(double);
}

void head_gram_backward(const HeadGramArgs& a, const float* x, const float* dG, const int32_t* lengths, float* dx) {
  const int64_t B = a.B, T = a.T, H = a.H, D = a.D;
  const Gram g{B, T, H, D, lengths};
  const int64_t n = B * T * H * D;
  if (n == 0) return;
  const unsigned grid = blocks_for(n, kThreads) < 65535u * 8 ? blocks_for(n, kThreads) : 65535u * 8;
  gram_backward_kernel<<<grid, kThreads, 0, stream()>>>(g, x, dG, dx);
  PILLARS_CUDA_LAUNCHED("head_gram gram_backward_kernel");
}

} // namespace pillars::cuda
