// The fused CPU attention kernels with bf16 products (AttentionParams::bf16, set by the attention
// op when the CPU's matmul precision is bf16) against a float64 reference computed on the operands
// rounded to bf16: Q, K, V, dO rounded; the softmax, its statistics and δ exact.
//
// Tolerance. The kernel also rounds P before P·V and Pᵀ·dO, and dS before dS·K and dSᵀ·Q (each at
// most 2⁻⁸ of the value, half an ulp of bf16's 8 significant bits), and δ = rowsum(dO ∘ O) comes
// from its own O, itself within that error. So each output element is checked against
//     |got − ref| ≤ 2⁻⁶ · M + 10⁻⁶,
// M the sum of the magnitudes of the terms that make it (Σ_j P_ij |v_jd| for O; for dQ, dK the
// same with |P_ij| (|dP_ij| + |δ_i|) as |dS_ij|): four times the rounding of one factor, for the
// two rounded factors and the fp32 sums. Each case also checks that the result is NOT that close
// to the fp32 reference of the unrounded operands everywhere (the error is bf16's, not fp32's), so
// a silent fp32 path fails. With bf16 off the same inputs stay within fp32's tolerance of the
// unrounded reference (that fp32 is bit for bit what it was is the first-updates pins' check).
// kv_rounded: K and V rounded beforehand (as a decoder's cache is, once, as written) and read
// without rounding give the bits of rounding them in the kernel, forward and backward.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/tensor.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cast.h"

using namespace pillars;

namespace {

float bf16_value(float x) { return bf16_to_f32(f32_to_bf16(x)); }

struct Case {
  int64_t B, H, Tq, Tk, D;
  bool causal, ragged;
};

struct Data {
  std::vector<float> Q, K, V, dO;
  std::vector<int32_t> lengths;
};

Data make(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Data d;
  const auto fill = [&](std::vector<float>& x, int64_t T) {
    x.resize(static_cast<size_t>(c.B * T * c.H * c.D));
    for (float& v : x) v = n(rng);
  };
  fill(d.Q, c.Tq), fill(d.K, c.Tk), fill(d.V, c.Tk), fill(d.dO, c.Tq);
  for (int64_t b = 0; b < c.B; ++b) d.lengths.push_back(static_cast<int32_t>(c.ragged ? c.Tk - 13 * b - 3 : c.Tk));
  return d;
}

// Forward and backward in float64 on the given operands (rounded or not), with the magnitudes.
struct Reference {
  std::vector<double> O, dQ, dK, dV, mO, mdQ, mdK, mdV;
};

Reference reference(const Case& c, const cpu::AttentionParams& p, const Data& d, bool round) {
  const auto val = [&](const std::vector<float>& x, size_t i) { return double(round ? bf16_value(x[i]) : x[i]); };
  const int64_t H = c.H, D = c.D;
  const auto qi = [&](int64_t b, int64_t i, int64_t h, int64_t e) { return size_t(((b * c.Tq + i) * H + h) * D + e); };
  const auto ki = [&](int64_t b, int64_t j, int64_t h, int64_t e) { return size_t(((b * c.Tk + j) * H + h) * D + e); };
  Reference r;
  const size_t nq = d.Q.size(), nk = d.K.size();
  r.O.assign(nq, 0), r.mO.assign(nq, 0), r.dQ.assign(nq, 0), r.mdQ.assign(nq, 0);
  r.dK.assign(nk, 0), r.mdK.assign(nk, 0), r.dV.assign(nk, 0), r.mdV.assign(nk, 0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < c.Tq; ++i) {
        const int64_t n = cpu::attention_visible_keys(p, b, i);
        if (n == 0) continue;
        std::vector<double> P(n), dP(n);
        double m = -INFINITY, l = 0;
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t e = 0; e < D; ++e) s += val(d.Q, qi(b, i, h, e)) * val(d.K, ki(b, j, h, e));
          P[j] = s * p.scale;
          m = std::max(m, P[j]);
        }
        for (double& x : P) l += (x = std::exp(x - m));
        for (double& x : P) x /= l;
        double delta = 0;
        for (int64_t j = 0; j < n; ++j) {
          double g = 0;
          for (int64_t e = 0; e < D; ++e) g += val(d.dO, qi(b, i, h, e)) * val(d.V, ki(b, j, h, e));
          dP[j] = g;
          delta += P[j] * g;
        }
        for (int64_t j = 0; j < n; ++j) {
          const double ds = P[j] * (dP[j] - delta), mds = P[j] * (std::fabs(dP[j]) + std::fabs(delta));
          for (int64_t e = 0; e < D; ++e) {
            const double v = val(d.V, ki(b, j, h, e)), k = val(d.K, ki(b, j, h, e));
            const double q = val(d.Q, qi(b, i, h, e)), g = val(d.dO, qi(b, i, h, e));
            r.O[qi(b, i, h, e)] += P[j] * v, r.mO[qi(b, i, h, e)] += P[j] * std::fabs(v);
            r.dV[ki(b, j, h, e)] += P[j] * g, r.mdV[ki(b, j, h, e)] += P[j] * std::fabs(g);
            r.dQ[qi(b, i, h, e)] += p.scale * ds * k, r.mdQ[qi(b, i, h, e)] += p.scale * mds * std::fabs(k);
            r.dK[ki(b, j, h, e)] += p.scale * ds * q, r.mdK[ki(b, j, h, e)] += p.scale * mds * std::fabs(q);
          }
        }
      }
  return r;
}

// Whether every element is within the tolerance; counts those that are not.
int64_t beyond(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& mag,
               double relative) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= relative * mag[i] + 1e-6)) ++bad;
  return bad;
}

void check_case(const Case& c) {
  CAPTURE(c.B);
  CAPTURE(c.Tq);
  CAPTURE(c.Tk);
  CAPTURE(c.D);
  CAPTURE(c.causal);
  CAPTURE(c.ragged);
  std::mt19937 rng(static_cast<unsigned>(c.Tq * 131 + c.Tk * 7 + c.D + c.causal));
  const Data d = make(c, rng);
  cpu::AttentionParams p = cpu::attention_params_contiguous(c.B, c.H, c.Tq, c.Tk, c.D);
  p.causal = c.causal;
  p.key_lengths = d.lengths.data();
  p.bf16 = true;
  std::vector<float> O(d.Q.size()), lse(static_cast<size_t>(c.B * c.H * c.Tq)), dQ(d.Q.size()), dK(d.K.size()),
      dV(d.V.size());
  cpu::attention_forward(p, d.Q.data(), d.K.data(), d.V.data(), O.data(), lse.data(), nullptr);
  cpu::attention_backward(p, d.Q.data(), d.K.data(), d.V.data(), O.data(), lse.data(), d.dO.data(), dQ.data(),
                          dK.data(), dV.data());
  const Reference r = reference(c, p, d, /*round=*/true);
  const double tol = std::ldexp(1.0, -6);
  CHECK(beyond(O, r.O, r.mO, tol) == 0);
  CHECK(beyond(dV, r.dV, r.mdV, tol) == 0);
  CHECK(beyond(dQ, r.dQ, r.mdQ, tol) == 0);
  CHECK(beyond(dK, r.dK, r.mdK, tol) == 0);
  // Not fp32: against the unrounded operands, some output is farther than fp32 sums would be.
  const Reference plain = reference(c, p, d, /*round=*/false);
  CHECK(beyond(O, plain.O, plain.mO, 1e-5) > 0);
  CHECK(beyond(dQ, plain.dQ, plain.mdQ, 1e-5) > 0);

  // bf16 off: fp32 accuracy.
  cpu::AttentionParams q = cpu::attention_params_contiguous(c.B, c.H, c.Tq, c.Tk, c.D);
  q.causal = c.causal, q.key_lengths = d.lengths.data();
  std::vector<float> O32(O.size()), lse32(lse.size()), dQ32(dQ.size()), dK32(dK.size()), dV32(dV.size());
  cpu::attention_forward(q, d.Q.data(), d.K.data(), d.V.data(), O32.data(), lse32.data(), nullptr);
  cpu::attention_backward(q, d.Q.data(), d.K.data(), d.V.data(), O32.data(), lse32.data(), d.dO.data(), dQ32.data(),
                          dK32.data(), dV32.data());
  CHECK(beyond(O32, plain.O, plain.mO, 1e-5) == 0); // fp32 stays fp32-accurate
  CHECK(beyond(dQ32, plain.dQ, plain.mdQ, 1e-5) == 0);
}

// Forward and backward in bf16 on K, V as given (kv_rounded as told): O, lse, dQ, dK, dV in a row.
std::vector<float> run_bf16(const Case& c, const Data& d, const std::vector<float>& K, const std::vector<float>& V,
                            bool kv_rounded) {
  cpu::AttentionParams p = cpu::attention_params_contiguous(c.B, c.H, c.Tq, c.Tk, c.D);
  p.causal = c.causal, p.key_lengths = d.lengths.data();
  p.bf16 = true, p.kv_rounded = kv_rounded;
  std::vector<float> O(d.Q.size()), lse(static_cast<size_t>(c.B * c.H * c.Tq)), dQ(d.Q.size()), dK(K.size()),
      dV(V.size());
  cpu::attention_forward(p, d.Q.data(), K.data(), V.data(), O.data(), lse.data(), nullptr);
  cpu::attention_backward(p, d.Q.data(), K.data(), V.data(), O.data(), lse.data(), d.dO.data(), dQ.data(), dK.data(),
                          dV.data());
  std::vector<float> all;
  for (const std::vector<float>* x : {&O, &lse, &dQ, &dK, &dV}) all.insert(all.end(), x->begin(), x->end());
  return all;
}

void check_kv_rounded(const Case& c) {
  CAPTURE(c.Tq);
  CAPTURE(c.Tk);
  CAPTURE(c.D);
  std::mt19937 rng(static_cast<unsigned>(c.Tq * 17 + c.Tk + c.D));
  const Data d = make(c, rng);
  std::vector<float> K = d.K, V = d.V; // rounded once, as cache_write stores them in bf16
  cpu::round_to_bf16(K.data(), static_cast<int64_t>(K.size()));
  cpu::round_to_bf16(V.data(), static_cast<int64_t>(V.size()));
  const std::vector<float> want = run_bf16(c, d, d.K, d.V, false), got = run_bf16(c, d, K, V, true);
  REQUIRE(want.size() == got.size());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
}

} // namespace

TEST_CASE("attention bf16: K and V rounded once and read as kv_rounded give the same bits as rounding in the kernel") {
  check_kv_rounded({1, 3, 1, 77, 40, false, true}); // one query over a ragged cache: a decoding step
  check_kv_rounded({4, 2, 1, 200, 64, false, true});
  check_kv_rounded({2, 2, 37, 90, 24, true, true});
}

TEST_CASE("attention bf16: fused forward and backward against float64 on bf16 operands, not causal") {
  check_case({2, 2, 100, 100, 24, false, false});
  check_case({2, 2, 37, 90, 64, false, true});
}

TEST_CASE("attention bf16: fused forward and backward against float64 on bf16 operands, causal, ragged") {
  check_case({2, 2, 100, 100, 32, true, false});
  check_case({3, 1, 70, 130, 16, true, true});
  check_case({1, 3, 1, 77, 40, false, true}); // one query: a decoding step
}
