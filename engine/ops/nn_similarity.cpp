// head_gram (the k × k Gram matrix of GHT, docs/METHOD.md §2) and its backward op.
//
// head_gram: x (B, T, H, D) f32, lengths (B) i32 or none → G (H, H)
//   G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]     (padding positions t ≥ len_b left out)
//   With E_i the flattened valid features of head i, G = E Eᵀ, so dE = (dG + dGᵀ) E, i.e.
//   dx[b,t,i,:] = Σ_j (dG + dGᵀ)[i, j] · x[b,t,j,:] on valid positions, 0 on padding.
//                                                    → op head_gram_backward(x, dG [, lengths])
//   The forward sums tokens in fixed chunks of kGramChunk (a partial H × H in double per chunk, in
//   the workspace), then adds the chunks in order: deterministic for any thread count.
#include <algorithm>
#include <cmath>

#include "engine/ops/common.h"
#include "engine/ops/nn.h"

namespace pillars::ops {
namespace {

using detail::kParallelGrain;
constexpr int64_t kGramChunk = 32;      // tokens per partial Gram matrix

// ---- head_gram ---------------------------------------------------------------------------------

struct GramView {
  int64_t B, T, H, D;
  const int32_t* lengths; // nullable
  bool valid(int64_t token) const { return !lengths || token % T < lengths[token / T]; }
  int64_t tokens() const { return B * T; }
};

GramView gram_view(const Tensor& x, const Tensor* lengths) {
  GramView v{x.dim(0), x.dim(1), x.dim(2), x.dim(3), lengths ? lengths->data<int32_t>() : nullptr};
  for (int64_t b = 0; v.lengths && b < v.B; ++b)
    PILLARS_CHECK(v.lengths[b] >= 0 && v.lengths[b] <= v.T, "head_gram: lengths[", b, "] = ", v.lengths[b],
                  " is outside [0, ", v.T, "]");
  return v;
}

// inputs: x [, lengths] (head_gram) or x, dG [, lengths] (backward)
std::vector<OutputSpec> infer_gram(const Graph& g, const Node& n, bool backward) {
  const Shape& xs = g.shape(n.inputs[0]);
  PILLARS_CHECK(xs.size() == 4 && g.dtype(n.inputs[0]) == DType::f32, n.op->name,
                ": x must be f32 (B, T, H, D), got ", shape_str(xs));
  const size_t first_extra = backward ? 2 : 1;
  if (n.inputs.size() > first_extra) {
    const ValueId len = n.inputs[first_extra];
    PILLARS_CHECK(g.dtype(len) == DType::i32 && g.shape(len) == Shape{xs[0]}, n.op->name,
                  ": lengths must be i32 of shape [", xs[0], "]");
  }
  if (!backward) return {{{xs[2], xs[2]}, DType::f32}};
  PILLARS_CHECK(g.shape(n.inputs[1]) == (Shape{xs[2], xs[2]}), n.op->name, ": dG must be (H, H)");
  return {{xs, DType::f32}};
}
std::vector<OutputSpec> infer_gram_forward(const Graph& g, const Node& n) { return infer_gram(g, n, false); }
std::vector<OutputSpec> infer_gram_backward(const Graph& g, const Node& n) { return infer_gram(g, n, true); }

size_t workspace_gram(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  const int64_t chunks = (xs[0] * xs[1] + kGramChunk - 1) / kGramChunk;
  return static_cast<size_t>(chunks * xs[2] * xs[2]) * sizeof(double);
}

// partial (H, H), upper triangle: Σ over the valid tokens of [t0, t1) of x_t x_tᵀ.
void gram_chunk(const GramView& v, const float* x, int64_t t0, int64_t t1, double* partial) {
  std::fill(partial, partial + v.H * v.H, 0.0);
  for (int64_t t = t0; t < t1; ++t) {
    if (!v.valid(t)) continue;
    const float* xt = x + t * v.H * v.D;
    for (int64_t i = 0; i < v.H; ++i)
      for (int64_t j = i; j < v.H; ++j) {
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < v.D; ++d) dot += xt[i * v.D + d] * xt[j * v.D + d];
        partial[i * v.H + j] += dot;
      }
  }
}

void cpu_gram(const KernelContext& c) {
  const GramView v = gram_view(c.in[0], c.in.size() > 1 ? &c.in[1] : nullptr);
  const float* x = c.in[0].data<float>();
  double* partials = static_cast<double*>(c.workspace);
  const int64_t chunks = (v.tokens() + kGramChunk - 1) / kGramChunk, HH = v.H * v.H;
#pragma omp parallel for schedule(static) if (c.in[0].numel() >= kParallelGrain)
  for (int64_t k = 0; k < chunks; ++k)
    gram_chunk(v, x, k * kGramChunk, std::min(v.tokens(), (k + 1) * kGramChunk), partials + k * HH);
  float* G = c.out[0].data<float>();
  for (int64_t i = 0; i < v.H; ++i)
    for (int64_t j = i; j < v.H; ++j) {
      double sum = 0.0;
      for (int64_t k = 0; k < chunks; ++k) sum += partials[k * HH + i * v.H + j];
      G[i * v.H + j] = G[j * v.H + i] = static_cast<float>(sum);
    }
}

void cpu_gram_backward(const KernelContext& c) {
  const GramView v = gram_view(c.in[0], c.in.size() > 2 ? &c.in[2] : nullptr);
  const float *x = c.in[0].data<float>(), *dG = c.in[1].data<float>();
  float* dx = c.out[0].data<float>();
#pragma omp parallel for schedule(static) if (c.in[0].numel() >= kParallelGrain)
  for (int64_t t = 0; t < v.tokens(); ++t) {
    const float* xt = x + t * v.H * v.D;
    float* dxt = dx + t * v.H * v.D;
    std::fill(dxt, dxt + v.H * v.D, 0.0f);
    if (!v.valid(t)) continue;
    for (int64_t i = 0; i < v.H; ++i)
      for (int64_t j = 0; j < v.H; ++j) {
        const float s = dG[i * v.H + j] + dG[j * v.H + i]; // (dG + dGᵀ)[i, j]
#pragma omp simd
        for (int64_t d = 0; d < v.D; ++d) dxt[i * v.D + d] += s * xt[j * v.D + d];
      }
  }
}

const OpDef kGramBackward{.name = "head_gram_backward", .infer = infer_gram_backward, .cpu = cpu_gram_backward,
                          .cuda = PILLARS_CUDA_KERNEL(head_gram_backward)};

std::vector<ValueId> vjp_gram(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (!needs[0] || dy[0] == kNoValue) return grads;
  std::vector<ValueId> in{n.inputs[0], dy[0]};
  if (n.inputs.size() > 1) in.push_back(n.inputs[1]);
  grads[0] = g.add1(kGramBackward, in);
  return grads;
}

const OpDef kGram{.name = "head_gram", .infer = infer_gram_forward, .cpu = cpu_gram, .cuda = PILLARS_CUDA_KERNEL(head_gram),
                  .vjp = vjp_gram, .workspace = workspace_gram, .cuda_workspace = PILLARS_CUDA_WORKSPACE(head_gram)};

} // namespace

ValueId head_gram(Graph& g, ValueId x, ValueId lengths) {
  return g.add1(kGram, lengths == kNoValue ? std::vector<ValueId>{x} : std::vector<ValueId>{x, lengths});
}

} // namespace pillars::ops
