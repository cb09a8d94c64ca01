// The optimizers' elementwise loops: see adam.h for the update rules.
//
// Each update is written once, as a function of one element (adam_element, sgd_element), and
// applied over contiguous blocks of the tensor; large tensors spread their blocks over OpenMP
// threads. The per-element functions are inlined into the block loops, whose loop-invariant flags
// the compiler hoists out, leaving straight-line vectorizable bodies.
#include "kernels/cpu/adam.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace pillars::cpu {
namespace {

// Elements per block: 32 Ki floats, enough streaming work per block to amortize OpenMP's fork/join
// (the loops are memory-bound: ~20 bytes per element for Adam); a tensor of at most one block runs
// on the calling thread.
constexpr int64_t kBlock = int64_t{1} << 15;

// body(begin, end) over [0, n) in blocks of kBlock, on OpenMP threads when there is more than one
// block and we are not already inside a parallel region.
template <class Body>
void for_blocks(int64_t n, const Body& body) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && !omp_in_parallel())
  for (int64_t b = 0; b < blocks; ++b) body(b * kBlock, std::min(n, (b + 1) * kBlock));
}

inline void adam_element(float& p, float grad, float& m, float& v, float* v_max, const AdamArgs& c) {
  const float g = c.l2 != 0.0f ? grad + c.l2 * p : grad; // grad.add(p, alpha=λ₂)
  if (c.decay != 1.0f) p = p * c.decay;                  // p.mul_(1 − lr·λ)
  m = m * c.beta1 + c.one_minus_beta1 * g;               // mul_(β₁).add_(g, alpha)
  v = v * c.beta2 + c.one_minus_beta2 * g * g;           // mul_(β₂).addcmul_(g, g)
  float second = v;
  if (v_max) second = *v_max = std::max(*v_max, v); // AMSGrad
  const float denom = std::sqrt(second) / c.bias_correction2_sqrt + c.eps;
  p = p + c.neg_step_size * m / denom; // addcdiv_(m, denom)
}

inline void sgd_element(float& p, float grad, float* buf, const SgdArgs& c) {
  float d = c.weight_decay != 0.0f ? grad + c.weight_decay * p : grad; // grad.add(p, alpha=λ)
  if (buf) {
    float& b = *buf;
    b = c.first ? d : b * c.momentum + c.one_minus_dampening * d;
    d = c.nesterov ? d + c.momentum * b : b;
  }
  p = p + c.neg_lr * d; // p.add_(d, alpha=−lr)
}

} // namespace

void adam_update(const AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max) {
  for_blocks(a.n, [&](int64_t begin, int64_t end) {
    const AdamArgs c = a; // a local copy: the stores to p, m, v cannot alias it
    if (v_max) {          // two loops, so that the null check is not made per element
      for (int64_t i = begin; i < end; ++i) adam_element(p[i], g[i], m[i], v[i], v_max + i, c);
    } else {
      for (int64_t i = begin; i < end; ++i) adam_element(p[i], g[i], m[i], v[i], nullptr, c);
    }
  });
}

void sgd_update(const SgdArgs& a, float* p, const float* g, float* buf) {
  for_blocks(a.n, [&](int64_t begin, int64_t end) {
    const SgdArgs c = a; // a local copy: the stores to p, buf cannot alias it
    if (buf) {           // two loops, so that the null check is not made per element
      for (int64_t i = begin; i < end; ++i) sgd_element(p[i], g[i], buf + i, c);
    } else {
      for (int64_t i = begin; i < end; ++i) sgd_element(p[i], g[i], nullptr, c);
    }
  });
}

namespace {

// Σ x² over [begin, end) with kLanes interleaved double accumulators (a fixed order that the
// compiler can vectorize), then the lanes added left to right.
double block_sum_of_squares(const float* x, int64_t begin, int64_t end) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += double(x[i + j]) * double(x[i + j]);
  for (; i < end; ++i) lane[0] += double(x[i]) * double(x[i]);
  double total = 0;
  for (double l : lane) total += l;
  return total;
}

} // namespace

double sum_of_squares(const SumOfSquaresArgs& a, const float* x) {
  const int64_t n = a.n;
  // At most kMaxParts equal parts, whose bounds depend on n alone; their sums are added in order.
  constexpr int64_t kMaxParts = 64;
  const int64_t parts = std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, kMaxParts);
  double partial[kMaxParts];
#pragma omp parallel for schedule(static) if (parts > 1 && !omp_in_parallel())
  for (int64_t k = 0; k < parts; ++k) partial[k] = block_sum_of_squares(x, n * k / parts, n * (k + 1) / parts);
  double total = 0;
  for (int64_t k = 0; k < parts; ++k) total += partial[k];
  return total;
}

void scale(const ScaleArgs& a, float* x) {
  const int64_t n = a.n;
  const float s = a.s;
  for_blocks(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] *= s;
  });
}

void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc) {
  const int64_t n = a.n;
  const float w = a.w;
  const bool first = a.first;
  for_blocks(n, [&](int64_t begin, int64_t end) {
    if (!g) {
      if (first) std::fill(acc + begin, acc + end, 0.0f);
      return;
    }
    for (int64_t i = begin; i < end; ++i) acc[i] = (first ? 0.0f : acc[i]) + w * g[i];
  });
}

void divide(const DivideArgs& a, float* x) {
  const int64_t n = a.n;
  const float s = a.s;
  for_blocks(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] /= s;
  });
}

} // namespace pillars::cpu
