// The CUDA attention kernels (kernels/cuda/attention.h) against a float64 reference written here:
// naive loops that materialize each row of S, independent of every kernel.
//
//   fp32 path:   ‖out − ref‖ / ‖ref‖ ≤ 1e-5 for O, lse, dQ, dK, dV (fp32 sums over ≤ 257 terms land
//                near 1e-6; 1e-5 leaves room without letting an indexing error through).
//   bf16 path:   FlashAttention's rule: max |out − ref| ≤ 2 · max |naive − ref| + floor, where
//                `naive` is textbook attention at the same precision (computed here on the CPU:
//                inputs rounded to bf16, S and dP in fp32 from bf16 operands, P and dS rounded to bf16
//                before their products, δ = rowsum(dO ∘ O), outputs rounded to T; measured ratios
//                reach 1.8 on an H100). The floor (1e-3 of the reference's
//                largest magnitude, plus 1e-6) only matters for tiny problems where the naive error
//                can be 0.
//   dropout:     the fp32 path equals the CPU kernels (kernels/cpu/attention.h) within 1e-5, so the
//                two draw the same masks; the tensor-core path is checked against the reference
//                with the same masks.
// Every output (and the backward's workspace) is poisoned with NaN bytes before each call, and
// every element must come back written. Inputs are fresh normal draws, never zeros.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda_device.h"

#ifdef PILLARS_HAVE_CUDA // the whole file: the kernels' API needs the CUDA headers
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "kernels/philox.h"

using namespace pillars;
using cuda::Precision;
using pillars::testing::no_gpu;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- bf16 on the host (round to nearest even, as __float2bfloat16_rn) ------------------------------

uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float bf16_value(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
float round_bf16(double x) { return bf16_value(bf16_bits(static_cast<float>(x))); }

// ---- a problem -----------------------------------------------------------------------------------

struct Case {
  int64_t B = 2, H = 2, Tq = 1, Tk = 1, D = 32;
  bool causal = false;
  std::vector<int32_t> key_lengths; // empty: no padding mask
  float dropout = 0.0f;
  uint64_t seed = 0, offset = 0, run_seed = 0; // run_seed ≠ 0 goes through device memory
  Precision precision = Precision::fp32;
  bool bf16_io = false; // T = __nv_bfloat16 instead of float

  std::string name() const {
    // str_cat, not operator+ chains: GCC 12 warns (-Wrestrict, a false positive) on the latter.
    std::string s = str_cat("B", B, " H", H, " Tq", Tq, " Tk", Tk, " D", D);
    if (causal) s += " causal";
    if (!key_lengths.empty()) {
      s += " lengths";
      for (int32_t n : key_lengths) s += str_cat(" ", n);
    }
    if (dropout > 0.0f) s += str_cat(" dropout ", dropout);
    s += precision == Precision::bf16 ? " bf16" : " fp32";
    if (bf16_io) s += " bf16-io";
    return s;
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(D)); }
  int64_t q_elems() const { return B * Tq * H * D; }
  int64_t k_elems() const { return B * Tk * H * D; }
  int64_t rows() const { return B * H * Tq; }
  int64_t visible(int64_t b, int64_t i) const { // the definition in attention.h
    int64_t n = Tk;
    if (!key_lengths.empty()) n = std::min<int64_t>(n, key_lengths[b]);
    if (causal) n = std::min<int64_t>(n, i + 1 + Tk - Tq);
    return std::max<int64_t>(n, 0);
  }
  double keep(int64_t b, int64_t h, int64_t i, int64_t j) const { // the dropout multiplier Z
    if (dropout <= 0.0f) return 1.0;
    const uint64_t index = static_cast<uint64_t>(((b * H + h) * Tq + i) * Tk + j);
    return philox_uniform(seed + run_seed, offset, index) >= dropout ? 1.0 / (1.0 - dropout) : 0.0;
  }
  cuda::AttentionArgs args(const int32_t* device_lengths, const uint64_t* device_run_seed) const {
    cuda::AttentionArgs a;
    a.B = B, a.H = H, a.Tq = Tq, a.Tk = Tk, a.D = D;
    a.scale = scale();
    a.causal = causal;
    a.key_lengths = device_lengths;
    a.dropout_p = dropout;
    a.seed = seed;
    a.rng_offset = offset;
    a.run_seed = device_run_seed;
    a.precision = precision;
    return a;
  }
};

struct Inputs {
  std::vector<float> q, k, v, dout; // as the kernels see them (bf16-representable when bf16_io)
};

Inputs random_inputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&](int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& e : x) e = c.bf16_io ? round_bf16(normal(rng)) : normal(rng);
    return x;
  };
  Inputs in;
  in.q = draw(c.q_elems());
  in.k = draw(c.k_elems());
  in.v = draw(c.k_elems());
  in.dout = draw(c.q_elems());
  return in;
}

// Results, as doubles: from the GPU, the float64 reference, or the naive bf16 attention.
struct Results {
  std::vector<double> o, lse, probs, dq, dk, dv;
};

// ---- the float64 reference -----------------------------------------------------------------------

// Element (b, t, h, d) of a (B, T, H, D) tensor.
size_t at(const Case& c, int64_t T, int64_t b, int64_t t, int64_t h, int64_t d) {
  return static_cast<size_t>(((b * T + t) * c.H + h) * c.D + d);
}

// How the naive references round: `operand` for Q, K, V, dO as the tensor cores see them, `prob`
// for P and dS before their products, `output` for what is written as T.
// delta_from_output: δ = rowsum(dO ∘ O) from the computed O (as FlashAttention and the kernels
// do) instead of its definition Σ_j P_ij dP_ij, which is exact for a row with one visible key
// and would make the naive error 0 there.
struct Rounding {
  bool operand = false, prob = false, output = false, logits = false, delta_from_output = false;
  double op(double x) const { return operand ? round_bf16(x) : x; }
  double pr(double x) const { return prob ? round_bf16(x) : x; }
  double out(double x) const { return output ? round_bf16(x) : x; }
  double lg(double x) const { return logits ? static_cast<float>(x) : x; } // S, dP̃ in fp32
};

// Attention forward and backward by the definitions in attention.h, one row of S at a time.
// With Rounding{} it is the float64 reference; with bf16 rounding, the naive bf16 attention.
Results reference(const Case& c, const Inputs& in, const Rounding& rd) {
  Results r;
  r.o.assign(c.q_elems(), 0.0);
  r.dq.assign(c.q_elems(), 0.0);
  r.dk.assign(c.k_elems(), 0.0);
  r.dv.assign(c.k_elems(), 0.0);
  r.lse.assign(c.rows(), -kInf);
  r.probs.assign(c.rows() * c.Tk, 0.0);
  const double scale = c.scale();
  std::vector<double> s(c.Tk), prob(c.Tk), dp(c.Tk), dsum(c.D);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.Tq; ++i) {
        const int64_t n = c.visible(b, i), row = (b * c.H + h) * c.Tq + i;
        if (n == 0) continue; // O = 0, lse = −∞, no gradient
        double mx = -kInf;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += rd.op(in.q[at(c, c.Tq, b, i, h, d)]) * rd.op(in.k[at(c, c.Tk, b, j, h, d)]);
          s[j] = rd.lg(rd.lg(dot) * scale);
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(s[j] - mx);
        r.lse[row] = mx + std::log(sum);
        for (int64_t j = 0; j < n; ++j) r.probs[row * c.Tk + j] = prob[j] = std::exp(s[j] - mx) / sum;
        // O = (P∘Z) V
        std::vector<double> o(c.D, 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const double w = rd.pr(prob[j]) * c.keep(b, h, i, j);
          for (int64_t d = 0; d < c.D; ++d) o[d] += w * rd.op(in.v[at(c, c.Tk, b, j, h, d)]);
        }
        for (int64_t d = 0; d < c.D; ++d) r.o[at(c, c.Tq, b, i, h, d)] = rd.out(rd.lg(o[d]));
        // dP = (dO Vᵀ)∘Z, δ = Σ_j P dP (the definition; the kernels use rowsum(dO∘O)), dS = P (dP − δ)
        double delta = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += rd.op(in.dout[at(c, c.Tq, b, i, h, d)]) * rd.op(in.v[at(c, c.Tk, b, j, h, d)]);
          dp[j] = rd.lg(dot) * c.keep(b, h, i, j);
          delta += prob[j] * dp[j];
        }
        if (rd.delta_from_output) {
          delta = 0.0;
          for (int64_t d = 0; d < c.D; ++d) delta += in.dout[at(c, c.Tq, b, i, h, d)] * r.o[at(c, c.Tq, b, i, h, d)];
          delta = rd.lg(delta);
        }
        std::fill(dsum.begin(), dsum.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const double ds = rd.pr(prob[j] * (dp[j] - delta));
          const double pz = rd.pr(prob[j]) * c.keep(b, h, i, j);
          for (int64_t d = 0; d < c.D; ++d) {
            dsum[d] += ds * rd.op(in.k[at(c, c.Tk, b, j, h, d)]);                               // dQ
            r.dk[at(c, c.Tk, b, j, h, d)] += scale * ds * rd.op(in.q[at(c, c.Tq, b, i, h, d)]); // dK
            r.dv[at(c, c.Tk, b, j, h, d)] += pz * rd.op(in.dout[at(c, c.Tq, b, i, h, d)]);      // dV
          }
        }
        for (int64_t d = 0; d < c.D; ++d) r.dq[at(c, c.Tq, b, i, h, d)] = scale * dsum[d];
      }
  if (rd.output) {
    for (auto* x : {&r.dq, &r.dk, &r.dv})
      for (double& e : *x) e = rd.out(rd.lg(e));
  }
  return r;
}

Rounding naive_bf16(const Case& c) {
  Rounding rd;
  rd.operand = rd.prob = rd.logits = rd.delta_from_output = true;
  rd.output = c.bf16_io;
  return rd;
}

// ---- the GPU side --------------------------------------------------------------------------------

// Device memory for the length of a test.
struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : p(cuda_malloc_or_throw(n)), bytes(n) {}
  ~DeviceBuffer() { cuda_free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
  void poison() const { // NaN in float and in bf16
    const std::vector<unsigned char> nan_bytes(bytes, 0xFF);
    cuda_copy_to_device(p, nan_bytes.data(), bytes);
  }
};

// Host values → a device buffer of T (float, or bf16 bits).
template <class T>
void upload(const DeviceBuffer& dst, const std::vector<float>& x) {
  if constexpr (sizeof(T) == 4) {
    cuda_copy_to_device(dst.p, x.data(), x.size() * 4);
  } else {
    std::vector<uint16_t> bits(x.size());
    for (size_t e = 0; e < x.size(); ++e) bits[e] = bf16_bits(x[e]);
    cuda_copy_to_device(dst.p, bits.data(), bits.size() * 2);
  }
}

template <class T>
std::vector<double> download(const DeviceBuffer& src, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  if constexpr (sizeof(T) == 4) {
    std::vector<float> x(out.size());
    cuda_copy_to_host(x.data(), src.p, x.size() * 4);
    std::copy(x.begin(), x.end(), out.begin());
  } else {
    std::vector<uint16_t> bits(out.size());
    cuda_copy_to_host(bits.data(), src.p, bits.size() * 2);
    for (size_t e = 0; e < out.size(); ++e) out[e] = bf16_value(bits[e]);
  }
  return out;
}

// Forward (and, if asked, backward with the GPU's own O and lse) on the device.
template <class T>
Results run_gpu(const Case& c, const Inputs& in, bool want_probs, bool want_backward) {
  const size_t qb = c.q_elems() * sizeof(T) + 16, kb = c.k_elems() * sizeof(T) + 16; // +16: never 0 bytes
  DeviceBuffer q(qb), k(kb), v(kb), o(qb), dout(qb), dq(qb), dk(kb), dv(kb);
  DeviceBuffer lse(c.rows() * 4 + 16), probs(c.rows() * c.Tk * 4 + 16), lengths(c.B * 4 + 16), run_seed(8);
  upload<T>(q, in.q);
  upload<T>(k, in.k);
  upload<T>(v, in.v);
  upload<T>(dout, in.dout);
  if (!c.key_lengths.empty()) cuda_copy_to_device(lengths.p, c.key_lengths.data(), c.B * 4);
  cuda_copy_to_device(run_seed.p, &c.run_seed, 8);
  const cuda::AttentionArgs a =
      c.args(c.key_lengths.empty() ? nullptr : lengths.as<int32_t>(), c.run_seed ? run_seed.as<uint64_t>() : nullptr);
  for (const DeviceBuffer* x : {&o, &lse, &probs, &dq, &dk, &dv}) x->poison();
  cuda::attention_forward<T>(a, q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(),
                             want_probs ? probs.as<float>() : nullptr);
  cuda_synchronize(); // a kernel fault is reported here
  Results r;
  r.o = download<T>(o, c.q_elems());
  r.lse = download<float>(lse, c.rows());
  if (want_probs) r.probs = download<float>(probs, c.rows() * c.Tk);
  if (want_backward) {
    DeviceBuffer workspace(cuda::attention_backward_workspace(a) + 16);
    workspace.poison();
    cuda::attention_backward<T>(a, q.as<T>(), k.as<T>(), v.as<T>(), o.as<T>(), lse.as<float>(), dout.as<T>(),
                                dq.as<T>(), dk.as<T>(), dv.as<T>(), workspace.p);
    cuda_synchronize(); // a kernel fault is reported here
    r.dq = download<T>(dq, c.q_elems());
    r.dk = download<T>(dk, c.k_elems());
    r.dv = download<T>(dv, c.k_elems());
  }
  return r;
}

Results run_gpu(const Case& c, const Inputs& in, bool want_probs, bool want_backward) {
  return c.bf16_io ? run_gpu<__nv_bfloat16>(c, in, want_probs, want_backward)
                   : run_gpu<float>(c, in, want_probs, want_backward);
}

// ---- comparisons ---------------------------------------------------------------------------------

// Counts the elements that are not finite (unwritten outputs come back as NaN).
int64_t non_finite(const std::vector<double>& x) {
  return std::count_if(x.begin(), x.end(), [](double e) { return !std::isfinite(e); });
}

// ‖out − ref‖ / ‖ref‖ (plain ‖out‖ when ref is all zeros).
double relative_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double diff = 0.0, norm = 0.0;
  for (size_t e = 0; e < ref.size(); ++e) {
    diff += (out[e] - ref[e]) * (out[e] - ref[e]);
    norm += ref[e] * ref[e];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double max_abs_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double m = 0.0;
  for (size_t e = 0; e < ref.size(); ++e) m = std::max(m, std::abs(out[e] - ref[e]));
  return m;
}

double max_abs(const std::vector<double>& x) {
  double m = 0.0;
  for (double e : x) m = std::max(m, std::abs(e));
  return m;
}

// lse: −∞ exactly where the reference has it (no NaN anywhere); the finite entries, as a vector.
void split_lse(const std::vector<double>& out, const std::vector<double>& ref, std::vector<double>& out_finite,
               std::vector<double>& ref_finite) {
  for (size_t e = 0; e < ref.size(); ++e) {
    CHECK_FALSE(std::isnan(out[e]));
    if (std::isinf(ref[e])) {
      CHECK(out[e] == ref[e]);
    } else {
      out_finite.push_back(out[e]);
      ref_finite.push_back(ref[e]);
    }
  }
}

bool verbose() { return std::getenv("PILLARS_ATTENTION_TEST_VERBOSE") != nullptr; }

// The fp32 path: every output within `bound` (relative) of the float64 reference.
void check_fp32(const Case& c, uint32_t seed, double bound = 1e-5, bool with_probs = false) {
  INFO(c.name());
  const Inputs in = random_inputs(c, seed);
  const Results ref = reference(c, in, Rounding{});
  const Results out = run_gpu(c, in, with_probs, true);
  std::vector<double> lse_out, lse_ref;
  split_lse(out.lse, ref.lse, lse_out, lse_ref);
  const struct {
    const char* name;
    const std::vector<double>& out;
    const std::vector<double>& ref;
  } fields[] = {{"O", out.o, ref.o},    {"lse", lse_out, lse_ref}, {"dQ", out.dq, ref.dq},
                {"dK", out.dk, ref.dk}, {"dV", out.dv, ref.dv},    {"probs", out.probs, ref.probs}};
  for (const auto& f : fields) {
    if (&f.out == &out.probs && !with_probs) continue;
    INFO(f.name);
    CHECK(non_finite(f.out) == 0);
    const double err = relative_error(f.out, f.ref);
    if (verbose()) MESSAGE(c.name(), " ", std::string(f.name), " relative error ", err);
    CHECK(err <= bound);
  }
}

// The bf16 path: FlashAttention's rule against the naive bf16 attention (see the top comment).
void check_bf16(const Case& c, uint32_t seed) {
  INFO(c.name());
  const Inputs in = random_inputs(c, seed);
  const Results ref = reference(c, in, Rounding{});
  const Results naive = reference(c, in, naive_bf16(c));
  const Results out = run_gpu(c, in, false, true);
  std::vector<double> lse_out, lse_ref, lse_naive, unused;
  split_lse(out.lse, ref.lse, lse_out, lse_ref);
  split_lse(naive.lse, ref.lse, lse_naive, unused);
  const struct {
    const char* name;
    const std::vector<double>&out, &naive, &ref;
  } fields[] = {{"O", out.o, naive.o, ref.o},
                {"lse", lse_out, lse_naive, lse_ref},
                {"dQ", out.dq, naive.dq, ref.dq},
                {"dK", out.dk, naive.dk, ref.dk},
                {"dV", out.dv, naive.dv, ref.dv}};
  for (const auto& f : fields) {
    INFO(f.name);
    CHECK(non_finite(f.out) == 0);
    const double err = max_abs_error(f.out, f.ref), naive_err = max_abs_error(f.naive, f.ref);
    const double floor = 1e-3 * max_abs(f.ref) + 1e-6; // (absolute: a reference of exact zeros)
    if (verbose())
      MESSAGE(c.name(), " ", std::string(f.name), " max error ", err, " naive ", naive_err, " ratio ",
              naive_err > 0 ? err / naive_err : 0.0, " floor ", floor);
    CHECK(err <= 2.0 * naive_err + floor);
  }
}

// Key lengths for B batch rows of Tk keys: the first row full, the next well below Tk, a third
// (when B ≥ 3) with no keys at all.
std::vector<int32_t> padded_lengths(int64_t B, int64_t Tk) {
  std::vector<int32_t> n(static_cast<size_t>(B), static_cast<int32_t>(Tk));
  if (B > 1) n[1] = static_cast<int32_t>(std::max<int64_t>(1, Tk / 3));
  if (B > 2) n[2] = 0;
  return n;
}

} // namespace

TEST_CASE("cuda attention: the fp32 path matches the float64 reference") {
  if (no_gpu()) return;
  uint32_t seed = 1;
  const int64_t lengths[][2] = {{1, 1}, {17, 17}, {64, 64}, {100, 100}, {257, 257}, {17, 100}, {100, 17}, {65, 130}};
  for (int64_t D : {8, 16, 32, 40, 64, 80, 128})
    for (const auto& tt : lengths)
      for (int variant = 0; variant < 2; ++variant) {
        Case c;
        c.Tq = tt[0], c.Tk = tt[1], c.D = D;
        c.causal = variant == 1;
        c.B = 3;
        c.H = D >= 64 ? 1 : 2;
        if ((D + tt[0]) % 2 == variant) c.key_lengths = padded_lengths(c.B, c.Tk);
        check_fp32(c, seed++);
      }
}

TEST_CASE("cuda attention: the bf16 tensor-core path is as accurate as naive bf16 attention") {
  if (no_gpu()) return;
  uint32_t seed = 100;
  const int64_t lengths[][2] = {{1, 1},    {17, 17},  {64, 64},  {100, 100}, {257, 257},
                                {17, 100}, {100, 17}, {64, 257}, {257, 64}};
  for (int64_t D : {32, 64, 128})
    for (const auto& tt : lengths)
      for (int variant = 0; variant < 4; ++variant) {
        Case c;
        c.Tq = tt[0], c.Tk = tt[1], c.D = D;
        c.precision = Precision::bf16;
        c.causal = variant & 1;
        c.B = 3;
        c.H = 2;
        if (variant & 2) c.key_lengths = padded_lengths(c.B, c.Tk);
        c.bf16_io = (tt[0] + variant) % 3 == 0;
        check_bf16(c, seed++);
      }
}

// The same rule as the tensor-core path (check_bf16), with a Hopper forward switched on: every
// forward of the case must run there (bf16 tensors, D = 64 and 128, no dropout); the backward is
// the tensor-core one, fed the Hopper forward's O and lse.
void check_hopper_forward(cuda::HopperForward forward) {
  if (no_gpu()) return;
  if (!cuda::hopper_attention_available()) {
    SKIP_TEST("the Hopper forward needs a GPU of compute capability 9.x and a build with sm_90a code");
    return;
  }
  const cuda::ScopedHopperForward on(forward); // back as it was however the case ends
  const int64_t before = cuda::hopper_attention_launches();
  uint32_t seed = 700;
  const int64_t lengths[][2] = {{1, 1}, {17, 17}, {64, 64}, {100, 100}, {257, 257}, {17, 100}, {100, 17}, {130, 300}};
  for (const int64_t D : {64, 128})
    for (const auto& tt : lengths)
      for (int variant = 0; variant < 4; ++variant) {
        Case c;
        c.Tq = tt[0], c.Tk = tt[1], c.D = D;
        c.precision = Precision::bf16;
        c.bf16_io = true;
        c.causal = variant & 1;
        c.B = 3, c.H = 2;
        if (variant & 2) c.key_lengths = padded_lengths(c.B, c.Tk);
        check_bf16(c, seed++);
      }
  CHECK(cuda::hopper_attention_launches() - before == 64); // one forward per case, all on Hopper
}

TEST_CASE("cuda attention: the Hopper (wgmma) forward is as accurate as naive bf16 attention") {
  check_hopper_forward(cuda::HopperForward::cp_async);
}

TEST_CASE("cuda attention: the Hopper TMA forward is as accurate as naive bf16 attention") {
  // Warp-specialized, TMA copies into swizzled tiles, V read MN-major, ping-pong: written without
  // a GPU; tests/test_cuda_wgmma.cpp's swizzled tile products check its operand layouts first.
  check_hopper_forward(cuda::HopperForward::tma);
}

TEST_CASE("cuda attention: the tensor-core path with dropout keeps the same masks") {
  if (no_gpu()) return;
  uint32_t seed = 300;
  for (int64_t D : {32, 64, 128})
    for (bool causal : {false, true}) {
      Case c;
      c.Tq = 100, c.Tk = 130, c.D = D, c.B = 2, c.H = 2;
      c.causal = causal;
      c.key_lengths = {130, 77};
      c.precision = Precision::bf16;
      c.dropout = 0.25f;
      c.seed = 1234 + D;
      c.offset = 8;
      c.run_seed = 77;
      c.bf16_io = causal;
      check_bf16(c, seed++);
    }
}

TEST_CASE("cuda attention: fp32 dropout equals the CPU kernels") {
  if (no_gpu()) return;
  for (int64_t D : {16, 64})
    for (bool causal : {false, true}) {
      Case c;
      c.B = 2, c.H = 3, c.Tq = 70, c.Tk = 90, c.D = D;
      c.causal = causal;
      c.key_lengths = {90, 41};
      c.dropout = 0.3f;
      c.seed = 42, c.offset = 12, c.run_seed = 1000003;
      INFO(c.name());
      const Inputs in = random_inputs(c, 7 + static_cast<uint32_t>(D));
      const Results out = run_gpu(c, in, false, true);

      cpu::AttentionParams p = cpu::attention_params_contiguous(c.B, c.H, c.Tq, c.Tk, c.D);
      p.scale = c.scale();
      p.causal = c.causal;
      p.key_lengths = c.key_lengths.data();
      p.dropout_p = c.dropout;
      p.seed = c.seed + c.run_seed; // the op adds the run seed the same way
      p.rng_offset = c.offset;
      std::vector<float> o(c.q_elems()), lse(c.rows()), dq(c.q_elems()), dk(c.k_elems()), dv(c.k_elems());
      cpu::attention_forward(p, in.q.data(), in.k.data(), in.v.data(), o.data(), lse.data(), nullptr);
      cpu::attention_backward(p, in.q.data(), in.k.data(), in.v.data(), o.data(), lse.data(), in.dout.data(), dq.data(),
                              dk.data(), dv.data());
      auto as_double = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
      CHECK(non_finite(out.o) == 0);
      CHECK(relative_error(out.o, as_double(o)) <= 1e-5);
      CHECK(relative_error(out.lse, as_double(lse)) <= 1e-5);
      CHECK(relative_error(out.dq, as_double(dq)) <= 1e-5);
      CHECK(relative_error(out.dk, as_double(dk)) <= 1e-5);
      CHECK(relative_error(out.dv, as_double(dv)) <= 1e-5);
      // and the float64 reference agrees (the masks are the ones attention.h defines)
      check_fp32(c, 7 + static_cast<uint32_t>(D));
    }
}

TEST_CASE("cuda attention: the probabilities output is the softmax") {
  if (no_gpu()) return;
  for (Precision precision : {Precision::fp32, Precision::bf16})
    for (int64_t D : {24, 64}) {
      Case c;
      c.B = 3, c.H = 2, c.Tq = 75, c.Tk = 140, c.D = D;
      c.causal = D == 64;
      c.key_lengths = padded_lengths(c.B, c.Tk);
      c.dropout = 0.1f; // probs are before dropout
      c.seed = 5;
      c.precision = precision;
      INFO(c.name());
      const Inputs in = random_inputs(c, 11);
      // On the tensor cores (bf16, D = 64) the logits come from bf16-rounded Q and K: the reference
      // is then the softmax of those logits (the naive bf16 attention's P, before its rounding).
      const bool tensor_cores = precision == Precision::bf16 && D == 64;
      const Results ref = reference(c, in, tensor_cores ? naive_bf16(c) : Rounding{});
      const Results out = run_gpu(c, in, true, false);
      CHECK(non_finite(out.probs) == 0);
      CHECK(relative_error(out.probs, ref.probs) <= (tensor_cores ? 1e-4 : 1e-5));
      for (int64_t b = 0; b < c.B; ++b) // masked entries are exactly zero
        for (int64_t h = 0; h < c.H; ++h)
          for (int64_t i = 0; i < c.Tq; ++i)
            for (int64_t j = c.visible(b, i); j < c.Tk; ++j)
              CHECK(out.probs[((b * c.H + h) * c.Tq + i) * c.Tk + j] == 0.0);
    }
}

TEST_CASE("cuda attention: bf16 inputs and outputs on the fp32 path") {
  if (no_gpu()) return;
  // The inputs are exact in bf16; only the outputs' rounding to bf16 (relative 2^-9 at most per
  // element) separates the result from the float64 reference.
  Case c;
  c.B = 2, c.H = 2, c.Tq = 90, c.Tk = 70, c.D = 64;
  c.causal = true;
  c.key_lengths = {70, 30};
  c.bf16_io = true;
  check_fp32(c, 21, 4e-3);
}

TEST_CASE("cuda attention: other head dimensions fall back from bf16 to the fp32 path") {
  if (no_gpu()) return;
  Case c;
  c.B = 2, c.H = 2, c.Tq = 50, c.Tk = 80, c.D = 48;
  c.causal = true;
  c.precision = Precision::bf16;
  check_fp32(c, 31); // fp32 accuracy: it ran on the CUDA cores
}

TEST_CASE("cuda attention: the backward is deterministic") {
  if (no_gpu()) return;
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    Case c;
    c.B = 2, c.H = 4, c.Tq = 300, c.Tk = 300, c.D = 64;
    c.causal = true;
    c.precision = precision;
    const Inputs in = random_inputs(c, 41);
    const Results first = run_gpu(c, in, false, true), second = run_gpu(c, in, false, true);
    CHECK(first.dq == second.dq);
    CHECK(first.dk == second.dk);
    CHECK(first.dv == second.dv);
  }
}

TEST_CASE("cuda attention: keys past a row's key length are never read") {
  // NaN in the padding slots of K and V (as a recycled buffer may hold) must change nothing: every
  // output equals the run with finite values there, and none is NaN (a kernel that read a padding
  // slot would turn its masked probability 0 into 0 · NaN = NaN). Both paths, causal or not; the
  // lengths cut a key tile in the middle and leave one batch row with no keys.
  if (no_gpu()) return;
  for (Precision precision : {Precision::fp32, Precision::bf16})
    for (bool causal : {false, true}) {
      Case c;
      c.B = 3, c.H = 2, c.Tq = 100, c.Tk = 130, c.D = 64;
      c.causal = causal;
      c.precision = precision;
      c.key_lengths = {130, 70, 0};
      INFO(c.name());
      const Inputs clean = random_inputs(c, 53);
      Inputs poisoned = clean;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t t = c.key_lengths[b]; t < c.Tk; ++t)
          for (int64_t h = 0; h < c.H; ++h)
            for (int64_t d = 0; d < c.D; ++d)
              poisoned.k[at(c, c.Tk, b, t, h, d)] = poisoned.v[at(c, c.Tk, b, t, h, d)] = std::nanf("");
      const bool probs = precision == Precision::fp32;
      const Results want = run_gpu(c, clean, probs, true), got = run_gpu(c, poisoned, probs, true);
      for (const auto* field : {&got.o, &got.probs, &got.dq, &got.dk, &got.dv}) CHECK(non_finite(*field) == 0);
      CHECK(got.o == want.o);
      CHECK(got.lse == want.lse);
      CHECK(got.probs == want.probs);
      CHECK(got.dq == want.dq);
      CHECK(got.dk == want.dk);
      CHECK(got.dv == want.dv);
    }
}

#else

TEST_CASE("cuda attention: the GPU suite in a build without CUDA") { SKIP_TEST(pillars::cuda_unavailable_reason()); }

#endif // PILLARS_HAVE_CUDA
