// Tests of the CPU attention kernels (kernels/cpu/attention.h).
//
// The chain of trust:
//   1. a float64 loop written here (forward and backward, no blocking, no tricks) is checked
//      against central finite differences in float64;
//   2. the materialized reference (attention_reference.cpp) is checked against the float64 loop;
//   3. the fused kernels (attention.cpp) are checked against the reference, on every SIMD level this
//      CPU has, over odd lengths, cross-attention, causal and padding masks, dropout and strided
//      views into a fused QKV projection; and their backward against finite differences of their
//      own forward.
// Tolerances are stated where they are used, with the reason for their size.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/philox.h"
#include "tests/alloc_counter.h"

using namespace pillars::cpu;
namespace tiles = pillars::cpu::attention_tiles;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- problem set-up --------------------------------------------------------------------------

struct Config {
  int64_t B = 2, H = 2, Tq = 7, Tk = 7, D = 16;
  bool causal = false;
  std::vector<int32_t> key_lengths; // empty: no padding mask
  float dropout = 0.0f;
  bool fused_qkv = false; // Q, K, V as views into one (B, T, 3, H, D) buffer (needs Tq == Tk)
  float spread = 2.0f;    // inputs ~ U(−spread, spread): 2 makes the softmax peaked, so the
                          // online max really moves between key blocks

  std::string describe() const {
    std::ostringstream s;
    s << "B" << B << " H" << H << " Tq" << Tq << " Tk" << Tk << " D" << D;
    if (causal) s << " causal";
    if (!key_lengths.empty()) s << " lengths";
    for (int32_t l : key_lengths) s << " " << l;
    if (dropout > 0) s << " dropout " << dropout;
    if (fused_qkv) s << " fused-qkv";
    return s.str();
  }
};

// Inputs and outputs of one problem, laid out as the config says. O and dO get a padded token
// stride (H·D + 3) so the output strides are exercised too.
struct Problem {
  AttentionParams p;
  std::vector<float> qkv_storage, q_storage, k_storage, v_storage, o_storage, do_storage;
  std::vector<float> grad_storage; // the gradients' buffer, shaped like the inputs' storage
  const float *Q, *K, *V;
  std::vector<float> lse, probs;

  explicit Problem(const Config& c, uint64_t seed = 1) {
    p = attention_params_contiguous(c.B, c.H, c.Tq, c.Tk, c.D);
    if (!c.key_lengths.empty()) p.key_lengths = c.key_lengths.data();
    p.causal = c.causal;
    p.dropout_p = c.dropout;
    p.seed = 0x5eed0000 + seed;
    p.rng_offset = 8;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::uniform_real_distribution<float> u(-c.spread, c.spread);
    auto random = [&](int64_t n) {
      std::vector<float> x(n);
      for (float& e : x) e = u(rng);
      return x;
    };
    const int64_t HD = c.H * c.D;
    if (c.fused_qkv) {
      qkv_storage = random(c.B * c.Tq * 3 * HD);
      Q = qkv_storage.data(), K = Q + HD, V = Q + 2 * HD;
      p.q_token_stride = p.k_token_stride = p.v_token_stride = 3 * HD;
      p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = c.Tq * 3 * HD;
    } else {
      q_storage = random(c.B * c.Tq * HD);
      k_storage = random(c.B * c.Tk * HD);
      v_storage = random(c.B * c.Tk * HD);
      Q = q_storage.data(), K = k_storage.data(), V = v_storage.data();
    }
    p.o_token_stride = HD + 3;
    p.o_batch_stride = c.Tq * p.o_token_stride;
    o_storage.assign(c.B * p.o_batch_stride, 0.0f);
    do_storage = random(c.B * p.o_batch_stride);
    lse.assign(c.B * c.H * c.Tq, 0.0f);
    probs.assign(c.B * c.H * c.Tq * c.Tk, 0.0f);
  }

  float* O() { return o_storage.data(); }
  const float* dO() const { return do_storage.data(); }
};

struct Gradients {
  std::vector<float> storage; // one buffer for a fused problem, else dQ | dK | dV concatenated
  float *dQ, *dK, *dV;
};

// Allocates gradients laid out like the problem's inputs, filled with NaN so that any element the
// backward forgets to write shows up.
Gradients make_gradients(const Problem& pr, const Config& c) {
  Gradients g;
  const int64_t HD = c.H * c.D;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (c.fused_qkv) {
    g.storage.assign(c.B * c.Tq * 3 * HD, nan);
    g.dQ = g.storage.data(), g.dK = g.dQ + HD, g.dV = g.dQ + 2 * HD;
  } else {
    g.storage.assign(c.B * (c.Tq + 2 * c.Tk) * HD, nan);
    g.dQ = g.storage.data(), g.dK = g.dQ + c.B * c.Tq * HD, g.dV = g.dK + c.B * c.Tk * HD;
  }
  return g;
}

// Element (b, t, h, d) of a strided (B, T, H, D) tensor.
template <class T>
T& at(T* x, int64_t batch_stride, int64_t token_stride, int64_t H, int64_t D, int64_t b, int64_t t, int64_t h,
      int64_t d) {
  return x[b * batch_stride + t * token_stride + h * D + d];
}

// A strided float tensor → a contiguous (B, T, H, D) float64 one.
std::vector<double> gather(const float* x, int64_t bs, int64_t ts, int64_t B, int64_t T, int64_t H, int64_t D) {
  std::vector<double> y(B * T * H * D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) y[((b * T + t) * H + h) * D + d] = at(x, bs, ts, H, D, b, t, h, d);
  return y;
}

// ---- the float64 loop ------------------------------------------------------------------------
// Contiguous (B, T, H, D) float64 tensors; the same masks and the same Philox dropout stream.

struct Attention64 {
  const AttentionParams& p;

  int64_t idx(int64_t T, int64_t b, int64_t t, int64_t h, int64_t d) const { return ((b * T + t) * p.H + h) * p.D + d; }
  double multiplier(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (p.dropout_p <= 0) return 1.0;
    const uint64_t e = static_cast<uint64_t>(((b * p.H + h) * p.Tq + i) * p.Tk + j);
    return pillars::philox_uniform(p.seed, p.rng_offset, e) >= p.dropout_p ? 1.0 / (1.0 - double(p.dropout_p)) : 0.0;
  }
  // The mask, spelled out independently of attention_visible_keys.
  bool visible(int64_t b, int64_t i, int64_t j) const {
    const bool padded = p.key_lengths && j >= p.key_lengths[b];
    const bool future = p.causal && j > i + (p.Tk - p.Tq);
    return !padded && !future;
  }
  // Row (b, h, i) of P = softmax(scale · q kᵀ + mask); returns the log-sum-exp (−inf: no key).
  double probabilities(const std::vector<double>& q, const std::vector<double>& k, int64_t b, int64_t h, int64_t i,
                       std::vector<double>& P) const {
    P.assign(p.Tk, 0.0);
    double max = -kInf, sum = 0;
    for (int64_t j = 0; j < p.Tk; ++j) {
      if (!visible(b, i, j)) continue;
      double s = 0;
      for (int64_t d = 0; d < p.D; ++d) s += q[idx(p.Tq, b, i, h, d)] * k[idx(p.Tk, b, j, h, d)];
      P[j] = double(p.scale) * s;
      max = std::max(max, P[j]);
    }
    if (max == -kInf) return -kInf; // no visible key: P stays 0
    for (int64_t j = 0; j < p.Tk; ++j) sum += (P[j] = visible(b, i, j) ? std::exp(P[j] - max) : 0.0);
    for (int64_t j = 0; j < p.Tk; ++j) P[j] /= sum;
    return max + std::log(sum);
  }
  // o (B, Tq, H, D), lse (B, H, Tq), probs (B, H, Tq, Tk)
  void forward(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
               std::vector<double>& o, std::vector<double>& lse, std::vector<double>& probs) const {
    o.assign(p.B * p.Tq * p.H * p.D, 0.0);
    lse.assign(p.B * p.H * p.Tq, 0.0);
    probs.assign(p.B * p.H * p.Tq * p.Tk, 0.0);
    std::vector<double> P;
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t i = 0; i < p.Tq; ++i) {
          const int64_t row = (b * p.H + h) * p.Tq + i;
          lse[row] = probabilities(q, k, b, h, i, P);
          for (int64_t j = 0; j < p.Tk; ++j) {
            probs[row * p.Tk + j] = P[j];
            for (int64_t d = 0; d < p.D; ++d)
              o[idx(p.Tq, b, i, h, d)] += P[j] * multiplier(b, h, i, j) * v[idx(p.Tk, b, j, h, d)];
          }
        }
  }
  // The textbook backward: dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik).
  void backward(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                const std::vector<double>& dout, std::vector<double>& dq, std::vector<double>& dk,
                std::vector<double>& dv) const {
    dq.assign(q.size(), 0.0), dk.assign(k.size(), 0.0), dv.assign(v.size(), 0.0);
    std::vector<double> P, dP(p.Tk);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t i = 0; i < p.Tq; ++i) {
          probabilities(q, k, b, h, i, P);
          double dot = 0;
          for (int64_t j = 0; j < p.Tk; ++j) {
            const double z = multiplier(b, h, i, j);
            double g = 0;
            for (int64_t d = 0; d < p.D; ++d) {
              g += dout[idx(p.Tq, b, i, h, d)] * v[idx(p.Tk, b, j, h, d)];
              dv[idx(p.Tk, b, j, h, d)] += P[j] * z * dout[idx(p.Tq, b, i, h, d)];
            }
            dP[j] = g * z;
            dot += P[j] * dP[j];
          }
          for (int64_t j = 0; j < p.Tk; ++j) {
            const double ds = P[j] * (dP[j] - dot) * double(p.scale);
            for (int64_t d = 0; d < p.D; ++d) {
              dq[idx(p.Tq, b, i, h, d)] += ds * k[idx(p.Tk, b, j, h, d)];
              dk[idx(p.Tk, b, j, h, d)] += ds * q[idx(p.Tq, b, i, h, d)];
            }
          }
        }
  }
};

// ---- comparisons -----------------------------------------------------------------------------

// max |a − b| / max(1, max |b|) over two arrays (+inf if a holds a NaN); equal infinities (lse = −inf) count as exact.
template <class A, class Bv>
double error(const A& a, const Bv& b) {
  double err = 0, scale = 1;
  for (size_t e = 0; e < a.size(); ++e) {
    const double x = a[e], y = b[e];
    if (std::isinf(y) && x == y) continue;
    if (!std::isfinite(x)) return kInf;
    err = std::max(err, std::abs(x - y));
    scale = std::max(scale, std::abs(y));
  }
  return err / scale;
}

struct Results { // everything one implementation produced, in float64, contiguous
  std::vector<double> o, lse, probs, dq, dk, dv;
};

using ForwardFn = decltype(&attention_forward);
using BackwardFn = decltype(&attention_backward);

Results run(Problem& pr, const Config& c, ForwardFn forward, BackwardFn backward) {
  const AttentionParams& p = pr.p;
  forward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), pr.probs.data());
  Gradients g = make_gradients(pr, c);
  backward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), pr.dO(), g.dQ, g.dK, g.dV);
  Results r;
  r.o = gather(pr.O(), p.o_batch_stride, p.o_token_stride, p.B, p.Tq, p.H, p.D);
  r.lse.assign(pr.lse.begin(), pr.lse.end());
  r.probs.assign(pr.probs.begin(), pr.probs.end());
  r.dq = gather(g.dQ, p.q_batch_stride, p.q_token_stride, p.B, p.Tq, p.H, p.D);
  r.dk = gather(g.dK, p.k_batch_stride, p.k_token_stride, p.B, p.Tk, p.H, p.D);
  r.dv = gather(g.dV, p.v_batch_stride, p.v_token_stride, p.B, p.Tk, p.H, p.D);
  bool all_written = true; // a NaN left over means an element was never written
  for (auto* grads : {&r.dq, &r.dk, &r.dv})
    for (double x : *grads) all_written = all_written && std::isfinite(x);
  CHECK(all_written);
  return r;
}

Results run_float64(Problem& pr) {
  const AttentionParams& p = pr.p;
  const Attention64 a{p};
  const auto q = gather(pr.Q, p.q_batch_stride, p.q_token_stride, p.B, p.Tq, p.H, p.D);
  const auto k = gather(pr.K, p.k_batch_stride, p.k_token_stride, p.B, p.Tk, p.H, p.D);
  const auto v = gather(pr.V, p.v_batch_stride, p.v_token_stride, p.B, p.Tk, p.H, p.D);
  const auto dout = gather(pr.dO(), p.o_batch_stride, p.o_token_stride, p.B, p.Tq, p.H, p.D);
  Results r;
  a.forward(q, k, v, r.o, r.lse, r.probs);
  a.backward(q, k, v, dout, r.dq, r.dk, r.dv);
  return r;
}

// Checks every output of `got` against `want`: forward outputs within tol_forward, gradients
// within tol_grad (both relative to max(1, max |want|) of the tensor).
void check_close(const Results& got, const Results& want, double tol_forward, double tol_grad) {
  CHECK(error(got.o, want.o) <= tol_forward);
  CHECK(error(got.lse, want.lse) <= tol_forward);
  CHECK(error(got.probs, want.probs) <= tol_forward);
  CHECK(error(got.dq, want.dq) <= tol_grad);
  CHECK(error(got.dk, want.dk) <= tol_grad);
  CHECK(error(got.dv, want.dv) <= tol_grad);
}

// The SIMD levels this CPU can run (the fused kernels are tested on each).
std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

// The configurations of the fused-vs-reference sweep.
std::vector<Config> sweep() {
  std::vector<Config> configs;
  const int64_t dims[] = {16, 32, 64, 20}; // 20: not a multiple of the 16-float padding
  int n = 0;
  for (int64_t Tq : {1, 7, 33, 65, 130})
    for (int64_t Tk : {Tq, Tq == 1 ? int64_t{5} : Tq / 2 + 3, Tq + 61}) // self, shorter, longer
      for (bool causal : {false, true})
        for (int mask = 0; mask < 3; ++mask) { // 0: none; 1: key lengths (one 0); 2: dropout
          Config c;
          c.B = 3, c.H = 2, c.Tq = Tq, c.Tk = Tk, c.D = dims[n++ % 4], c.causal = causal;
          if (mask == 1) c.key_lengths = {int32_t(Tk), int32_t(Tk / 2 + 1), 0};
          if (mask == 2) c.dropout = 0.1f;
          c.fused_qkv = Tq == Tk && n % 2 == 0;
          configs.push_back(c);
        }
  return configs;
}

// The fused kernels on every SIMD level against the reference. Both sides are float32 with
// different summation orders and exponentials (polynomial exp2 ≤ 2 ulp vs libm): measured
// differences are ≤ ~1e-6 relative to the tensor's largest value. Tolerance 1e-5 (forward) and
// 2e-5 (gradients: one more product and a cancellation in dP − δ); a wrong dropout element alone
// moves O by ~1e-2.
void check_fused_matches_reference(const Config& c) {
  Problem reference(c);
  const Results want = run(reference, c, attention_forward_reference, attention_backward_reference);
  for (Isa isa : available_isas()) {
    const ScopedIsa scoped(isa);
    INFO(attention_isa() << ": " << c.describe());
    Problem fused(c);
    check_close(run(fused, c, attention_forward, attention_backward), want, 1e-5, 2e-5);
  }
}

} // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("attention kernel: exp2 polynomial is within 2 ulp on every SIMD level") {
  // x from −126 to +20 in steps of 1/1024 − ε, plus −inf, which must give exactly 0.
  std::vector<float> x;
  for (double v = -126.0; v <= 20.0; v += 1.0 / 1024 - 1e-7) x.push_back(float(v));
  x.push_back(-std::numeric_limits<float>::infinity());
  while (x.size() % 16) x.push_back(0.0f);
  for (Isa isa : available_isas()) {
    const tiles::TileKernels& k = isa == Isa::avx512 ? tiles::tiles_avx512()
                                  : isa == Isa::avx2 ? tiles::tiles_avx2()
                                                     : tiles::tiles_generic();
    INFO("isa " << std::string(k.isa));
    std::vector<float> y = x;
    k.exp2_row(y.data(), int64_t(y.size()), 0.0f);
    double worst_ulp = 0;
    for (size_t e = 0; e < x.size(); ++e) {
      if (std::isinf(x[e])) {
        CHECK(y[e] == 0.0f);
        continue;
      }
      const double exact = std::exp2(double(x[e]));
      const double ulp = std::nextafter(float(exact), INFINITY) - float(exact);
      worst_ulp = std::max(worst_ulp, std::abs(y[e] - exact) / ulp);
    }
    CHECK(worst_ulp <= 2.0);
  }
}

TEST_CASE("attention kernel: float64 backward matches central finite differences") {
  // Tiny problem with every feature on; L = Σ dO ∘ O. In float64 with ε = 1e-5 the central
  // difference has truncation error ~ε²·|L'''| ≈ 1e-10 and round-off ~1e-16/ε ≈ 1e-11, so 1e-7
  // absolute leaves three orders of magnitude of margin, yet catches any wrong term.
  Config c;
  c.B = 2, c.H = 1, c.Tq = 4, c.Tk = 5, c.D = 3, c.causal = true, c.key_lengths = {5, 3};
  c.dropout = 0.3f, c.spread = 1.0f;
  Problem pr(c, 7);
  const AttentionParams& p = pr.p;
  const Attention64 a{p};
  auto q = gather(pr.Q, p.q_batch_stride, p.q_token_stride, p.B, p.Tq, p.H, p.D);
  auto k = gather(pr.K, p.k_batch_stride, p.k_token_stride, p.B, p.Tk, p.H, p.D);
  auto v = gather(pr.V, p.v_batch_stride, p.v_token_stride, p.B, p.Tk, p.H, p.D);
  const auto dout = gather(pr.dO(), p.o_batch_stride, p.o_token_stride, p.B, p.Tq, p.H, p.D);
  std::vector<double> dq, dk, dv;
  a.backward(q, k, v, dout, dq, dk, dv);
  auto loss = [&] {
    std::vector<double> o, lse, probs;
    a.forward(q, k, v, o, lse, probs);
    double L = 0;
    for (size_t e = 0; e < o.size(); ++e) L += dout[e] * o[e];
    return L;
  };
  const double eps = 1e-5;
  int checked = 0;
  for (auto [x, grad] : {std::pair{&q, &dq}, std::pair{&k, &dk}, std::pair{&v, &dv}})
    for (size_t e = 0; e < x->size(); ++e) {
      const double saved = (*x)[e];
      (*x)[e] = saved + eps;
      const double plus = loss();
      (*x)[e] = saved - eps;
      const double minus = loss();
      (*x)[e] = saved;
      CHECK(std::abs((plus - minus) / (2 * eps) - (*grad)[e]) <= 1e-7);
      checked += (*grad)[e] != 0.0;
    }
  CHECK(checked > 30); // the masks leave most gradients non-zero: the check is not vacuous
}

TEST_CASE("attention kernel: reference matches the float64 loop") {
  // Float32 vs float64 on O(1) values with sums over ≤ 70 terms: errors are a few 1e-7; the
  // tolerances (1e-5 forward, 2e-5 gradients, relative to the tensor's largest value) are ~20×
  // that, and far below what any wrong mask, index or formula produces (≥ 1e-2).
  for (const Config& c : {
           Config{2, 2, 7, 7, 16, false, {}, 0.0f, false, 2.0f},
           Config{2, 2, 9, 9, 16, true, {}, 0.0f, true, 2.0f},
           Config{3, 1, 5, 11, 32, false, {11, 4, 0}, 0.0f, false, 2.0f},
           Config{2, 2, 13, 6, 20, true, {6, 0}, 0.1f, false, 2.0f},
           Config{1, 3, 33, 70, 16, true, {}, 0.1f, false, 2.0f},
       }) {
    INFO(c.describe());
    Problem pr(c);
    const Results want = run_float64(pr);
    check_close(run(pr, c, attention_forward_reference, attention_backward_reference), want, 1e-5, 2e-5);
  }
}

TEST_CASE("attention kernel: fused matches the float64 loop") {
  for (const Config& c : {Config{2, 2, 70, 70, 32, true, {70, 9}, 0.1f, true, 2.0f},
                          Config{1, 2, 3, 130, 20, false, {100}, 0.0f, false, 3.0f}}) {
    INFO(c.describe());
    Problem pr(c);
    const Results want = run_float64(pr);
    check_close(run(pr, c, attention_forward, attention_backward), want, 1e-5, 2e-5);
  }
}

TEST_CASE("attention kernel: fused matches reference on every SIMD level") {
  for (const Config& c : sweep()) check_fused_matches_reference(c);
}

TEST_CASE("attention kernel: fused matches reference at summarization lengths (512 keys)") {
  // SAMSum's sources are up to 512 tokens, far beyond the sweep's 191: cross-attention from 40
  // summary positions, and encoder self-attention, over 512 keys with one padded batch row.
  Config cross;
  cross.B = 2, cross.H = 4, cross.Tq = 40, cross.Tk = 512, cross.D = 64, cross.key_lengths = {512, 301};
  Config self = cross;
  self.Tq = 512, self.H = 2;
  for (const Config& c : {cross, self}) check_fused_matches_reference(c);
}

TEST_CASE("attention kernel: rows that see no key give zeros, lse -inf and zero gradients") {
  // Batch 1 has key length 0; with causal and Tq > Tk, the first Tq − Tk query rows see nothing.
  Config c;
  c.B = 2, c.H = 2, c.Tq = 70, c.Tk = 20, c.D = 32, c.causal = true, c.key_lengths = {20, 0};
  c.dropout = 0.1f;
  Problem pr(c);
  const Results r = run(pr, c, attention_forward, attention_backward);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.Tq; ++i) {
        const bool sees_nothing = b == 1 || i < c.Tq - c.Tk;
        if (!sees_nothing) continue;
        CHECK(r.lse[(b * c.H + h) * c.Tq + i] == -kInf);
        for (int64_t d = 0; d < c.D; ++d) {
          const int64_t e = ((b * c.Tq + i) * c.H + h) * c.D + d;
          CHECK(r.o[e] == 0.0);
          CHECK(r.dq[e] == 0.0);
        }
        for (int64_t j = 0; j < c.Tk; ++j) CHECK(r.probs[((b * c.H + h) * c.Tq + i) * c.Tk + j] == 0.0);
      }
  for (int64_t e = c.Tk * c.H * c.D; e < 2 * c.Tk * c.H * c.D; ++e) { // batch 1: no key is seen
    CHECK(r.dk[e] == 0.0);
    CHECK(r.dv[e] == 0.0);
  }
  CHECK(std::isfinite(error(r.o, r.o))); // no NaN anywhere in O (error() returns inf on NaN)

  // No keys at all (Tk = 0): every row sees nothing.
  Config empty;
  empty.B = 1, empty.H = 2, empty.Tq = 3, empty.Tk = 0, empty.D = 16;
  Problem none(empty);
  const Results z = run(none, empty, attention_forward, attention_backward);
  for (double x : z.o) CHECK(x == 0.0);
  for (double x : z.lse) CHECK(x == -kInf);
  for (double x : z.dq) CHECK(x == 0.0);
}

// Fills the padding slots of K and V (token t ≥ key_lengths[b] of batch row b) with NaN, as a
// recycled buffer may hold there.
void poison_padding_keys(Problem& pr, const Config& c) {
  const AttentionParams& p = pr.p;
  const int64_t HD = c.H * c.D;
  float* k = c.fused_qkv ? pr.qkv_storage.data() + HD : pr.k_storage.data();
  float* v = c.fused_qkv ? pr.qkv_storage.data() + 2 * HD : pr.v_storage.data();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = c.key_lengths[b]; t < c.Tk; ++t)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t d = 0; d < c.D; ++d) {
          at(k, p.k_batch_stride, p.k_token_stride, c.H, c.D, b, t, h, d) = nan;
          at(v, p.v_batch_stride, p.v_token_stride, c.H, c.D, b, t, h, d) = nan;
        }
}

TEST_CASE("attention kernel: keys past a row's key length are never read") {
  // With NaN in the padding slots of K and V, every output and gradient must be *exactly* that of
  // the same problem with finite values there (no kernel may read them: a masked probability of 0
  // times NaN is still NaN), and dK, dV must be 0 past the length. run() also checks that no
  // gradient is NaN. The reference and the fused kernels on every SIMD level; self-attention with a
  // fused QKV buffer, causal and dropout, and cross-attention whose lengths cut a 64-key block.
  Config self;
  self.B = 3, self.H = 2, self.Tq = 65, self.Tk = 65, self.D = 32, self.causal = true;
  self.key_lengths = {65, 20, 1}, self.fused_qkv = true, self.dropout = 0.1f;
  Config cross;
  cross.B = 3, cross.H = 2, cross.Tq = 33, cross.Tk = 130, cross.D = 20;
  cross.key_lengths = {130, 70, 0};
  struct Kernels {
    const char* name;
    Isa isa;
    ForwardFn forward;
    BackwardFn backward;
  };
  std::vector<Kernels> kernels = {
      {"reference", available_isas().back(), attention_forward_reference, attention_backward_reference}};
  for (Isa isa : available_isas()) kernels.push_back({"fused", isa, attention_forward, attention_backward});
  for (const Config& c : {self, cross})
    for (const Kernels& k : kernels) {
      const ScopedIsa scoped(k.isa);
      const std::string which = std::string(k.name) + " " + attention_isa() + ": " + c.describe();
      INFO(which);
      Problem clean(c), poisoned(c);
      poison_padding_keys(poisoned, c);
      const Results want = run(clean, c, k.forward, k.backward);
      const Results got = run(poisoned, c, k.forward, k.backward);
      CHECK(error(got.o, want.o) == 0.0);
      CHECK(error(got.lse, want.lse) == 0.0);
      CHECK(error(got.probs, want.probs) == 0.0);
      CHECK(error(got.dq, want.dq) == 0.0);
      CHECK(error(got.dk, want.dk) == 0.0);
      CHECK(error(got.dv, want.dv) == 0.0);
      bool padding_gradients_zero = true;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t t = c.key_lengths[b]; t < c.Tk; ++t)
          for (int64_t e = 0; e < c.H * c.D; ++e) {
            const int64_t at_e = (b * c.Tk + t) * c.H * c.D + e;
            padding_gradients_zero = padding_gradients_zero && got.dk[at_e] == 0.0 && got.dv[at_e] == 0.0;
          }
      CHECK(padding_gradients_zero);
    }
}

TEST_CASE("attention kernel: dropout drops exactly the Philox elements") {
  // With V = the identity (Tk = D), O's row i is the dropped probability row itself:
  // O[i, j] = P[i, j] · Z[i, j]. So O[i, j] == 0 exactly where philox_uniform says "drop" (P > 0
  // here), and O[i, j] = P[i, j] / (1 − p) (to float rounding) where kept. Offsets 0, 8 and 3 put
  // the rows' first elements at, off, and between Philox 4-word boundaries and SIMD blocks.
  Config c;
  c.B = 2, c.H = 2, c.Tq = 40, c.Tk = 64, c.D = 64, c.dropout = 0.25f, c.spread = 0.5f;
  Problem pr(c);
  AttentionParams& p = pr.p;
  std::fill(pr.v_storage.begin(), pr.v_storage.end(), 0.0f);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = 0; j < c.Tk; ++j)
      for (int64_t h = 0; h < c.H; ++h)
        at(pr.v_storage.data(), p.v_batch_stride, p.v_token_stride, c.H, c.D, b, j, h, j) = 1.0f;
  for (Isa isa : available_isas())
    for (uint64_t offset : {0, 8, 3}) {
      const ScopedIsa scoped(isa);
      p.rng_offset = offset;
      INFO(attention_isa() << ", rng offset " << offset);
      attention_forward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), pr.probs.data());
      int64_t dropped = 0, wrong_drops = 0, wrong_keeps = 0;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.H; ++h)
          for (int64_t i = 0; i < c.Tq; ++i)
            for (int64_t j = 0; j < c.Tk; ++j) {
              const int64_t e = ((b * c.H + h) * c.Tq + i) * c.Tk + j;
              const bool keep = pillars::philox_uniform(p.seed, p.rng_offset, uint64_t(e)) >= p.dropout_p;
              const double o = at(pr.O(), p.o_batch_stride, p.o_token_stride, c.H, c.D, b, i, h, j);
              const double kept = pr.probs[e] / (1.0 - p.dropout_p);
              dropped += !keep;
              wrong_drops += !keep && o != 0.0;
              wrong_keeps += keep && !(std::abs(o - kept) <= 1e-6 * kept);
            }
      CHECK(wrong_drops == 0);
      CHECK(wrong_keeps == 0);
      const double fraction = double(dropped) / double(c.B * c.H * c.Tq * c.Tk);
      CHECK(fraction == doctest::Approx(0.25).epsilon(0.1)); // 10240 draws: σ ≈ 0.004
    }
}

TEST_CASE("attention kernel: fused backward matches finite differences of the fused forward") {
  // float32 central differences: L = Σ dO ∘ O summed in float64 from float32 O (|O| ≤ 1, 96
  // terms), so its round-off is ~1e-6; with ε = 1e-2 that is ~5e-5 in the difference quotient and
  // the truncation error ε²/6 · |L'''| is ~1e-4. Tolerance 2e-3 · max(1, |g|): 10× margin, while a
  // missing term (e.g. δ, the dropout scale, or a masked key leaking) is ≥ 1e-1.
  Config c;
  c.B = 2, c.H = 2, c.Tq = 6, c.Tk = 5, c.D = 4, c.causal = true, c.key_lengths = {5, 3};
  c.dropout = 0.2f, c.spread = 1.0f;
  Problem pr(c, 3);
  const AttentionParams& p = pr.p;
  Gradients g = make_gradients(pr, c);
  attention_forward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), nullptr);
  attention_backward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), pr.dO(), g.dQ, g.dK, g.dV);
  auto loss = [&] {
    attention_forward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), nullptr);
    const auto o = gather(pr.O(), p.o_batch_stride, p.o_token_stride, p.B, p.Tq, p.H, p.D);
    const auto dout = gather(pr.dO(), p.o_batch_stride, p.o_token_stride, p.B, p.Tq, p.H, p.D);
    double L = 0;
    for (size_t e = 0; e < o.size(); ++e) L += dout[e] * o[e];
    return L;
  };
  const float eps = 1e-2f;
  for (auto [x, grad] :
       {std::pair{&pr.q_storage, g.dQ}, std::pair{&pr.k_storage, g.dK}, std::pair{&pr.v_storage, g.dV}})
    for (size_t e = 0; e < x->size(); ++e) { // contiguous layout: gradient e ↔ input e
      const float saved = (*x)[e];
      (*x)[e] = saved + eps;
      const double plus = loss();
      (*x)[e] = saved - eps;
      const double minus = loss();
      (*x)[e] = saved;
      const double fd = (plus - minus) / (2.0 * double(eps));
      CHECK(std::abs(fd - grad[e]) <= 2e-3 * std::max(1.0, std::abs(fd)));
    }
}

TEST_CASE("attention kernel: results do not depend on the thread count") {
  // Each query block (forward) and each head (backward) is computed by one thread in a fixed
  // order, so 1 and 2 threads must agree bit for bit.
  Config c;
  c.B = 2, c.H = 3, c.Tq = 130, c.Tk = 130, c.D = 64, c.causal = true, c.dropout = 0.1f;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  Problem one(c);
  const Results a = run(one, c, attention_forward, attention_backward);
  omp_set_num_threads(2);
  Problem two(c);
  const Results b = run(two, c, attention_forward, attention_backward);
  omp_set_num_threads(threads);
  CHECK(a.o == b.o);
  CHECK(a.lse == b.lse);
  CHECK(a.dq == b.dq);
  CHECK(a.dk == b.dk);
  CHECK(a.dv == b.dv);
}

TEST_CASE("attention kernel: no allocation once shapes repeat") {
  // The per-thread scratch grows on the first call of a shape and is reused afterwards.
  Config c;
  c.B = 2, c.H = 2, c.Tq = 100, c.Tk = 90, c.D = 32, c.causal = true, c.dropout = 0.1f;
  Problem pr(c);
  const AttentionParams& p = pr.p;
  Gradients g = make_gradients(pr, c);
  auto step = [&] {
    attention_forward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), nullptr);
    attention_backward(p, pr.Q, pr.K, pr.V, pr.O(), pr.lse.data(), pr.dO(), g.dQ, g.dK, g.dV);
  };
  step(); // warm-up: scratch (and OpenMP's thread team) reach their size
  pillars::testing::AllocationCounter counter;
  if (!counter.active()) {
    MESSAGE("operator new is not ours (sanitizer build): allocation count not checked");
    return;
  }
  step();
  step();
  CHECK(counter.stop() == 0);
}
