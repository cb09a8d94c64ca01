// The GPU optimizer kernels (kernels/cuda/adam.h) against the CPU kernels (kernels/cpu/adam.h):
// Adam (with and without AMSGrad, with L2 weight decay), AdamW, SGD (plain, heavy-ball momentum
// with dampening, Nesterov), scale, and the deterministic sum of squares.
//
// Each case runs several steps on random parameters, moments and gradients (fresh gradients every
// step), with n = 100003 — not a multiple of the block size (256) nor of 4, so the vectorized
// kernels' scalar tail runs — once on 16-byte aligned buffers (the float4 kernels) and once on
// buffers shifted by one float (the scalar kernels). After every step each state tensor must
// agree with the CPU's to 1e-6 relative: |gpu − cpu| ≤ 1e-6·|cpu|. The kernels are written to
// perform the CPU's fp32 operations in the same order without fused multiply-adds, so in fact
// they should agree bit for bit; the test reports how many elements do.
//
// On a machine without a GPU (or a build without CUDA) every case prints why it is skipped.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/adam.h"
#include "runtime/cuda_device.h"

#ifdef PILLARS_HAVE_CUDA
#include "kernels/cuda/adam.h"
#endif

using namespace pillars;
using pillars::testing::no_gpu;

#ifdef PILLARS_HAVE_CUDA
namespace {

constexpr int64_t kN = 100003; // not a multiple of 256 (the block) nor of 4 (the float4 kernels)
constexpr int kSteps = 5;
constexpr double kRelTol = 1e-6;

// Copies and kernels share the backend's stream, so the order is already right; waiting around
// every transfer also surfaces a kernel fault at the step that caused it.
void sync_device() { cuda_synchronize(); }

// n floats on the device, `shift` floats past a 256-byte aligned allocation (shift 1: not 16-byte
// aligned, so the kernels take their scalar path).
class DeviceArray {
 public:
  DeviceArray(const std::vector<float>& host, int shift) : n_(host.size()), shift_(shift) {
    base_ = static_cast<float*>(cuda_malloc_or_throw((n_ + shift_) * sizeof(float)));
    upload(host);
  }
  ~DeviceArray() { cuda_free(base_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  float* get() const { return base_ + shift_; }
  void upload(const std::vector<float>& host) {
    sync_device();
    cuda_copy_to_device(get(), host.data(), n_ * sizeof(float));
    sync_device();
  }
  std::vector<float> download() const {
    sync_device();
    std::vector<float> host(n_);
    cuda_copy_to_host(host.data(), get(), n_ * sizeof(float));
    return host;
  }

 private:
  size_t n_;
  int shift_;
  float* base_ = nullptr;
};

std::vector<float> uniform(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// Every element within kRelTol relative of the CPU's; reports the bitwise matches.
void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  size_t bad = 0, identical = 0, first_bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    identical += std::memcmp(&gpu[i], &cpu[i], sizeof(float)) == 0 ? 1 : 0;
    const double diff = std::fabs(double(gpu[i]) - double(cpu[i]));
    if (!(diff <= kRelTol * std::fabs(double(cpu[i])))) {
      if (bad == 0) first_bad = i;
      ++bad;
    }
  }
  INFO(what, ": ", identical, " of ", cpu.size(), " elements bit-identical");
  if (bad > 0) INFO("first mismatch at ", first_bad, ": gpu ", gpu[first_bad], ", cpu ", cpu[first_bad]);
  CHECK(bad == 0);
  if (identical != cpu.size())
    MESSAGE(what, ": ", cpu.size() - identical, " elements differ in their bits (within tolerance)");
}

struct AdamCase {
  const char* name;
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled, amsgrad;
};

// The arguments of update t of kN elements, as engine/optim/adam.cpp computes them (in double,
// rounded once); Args is cpu::AdamArgs or cuda::AdamArgs (one struct: kernels/args/adam.h).
template <class Args>
Args adam_args(const AdamCase& a, int64_t t) {
  const double bias_correction1 = 1 - std::pow(a.beta1, double(t));
  const double bias_correction2 = 1 - std::pow(a.beta2, double(t));
  return {.n = kN,
          .beta1 = float(a.beta1),
          .one_minus_beta1 = float(1 - a.beta1),
          .beta2 = float(a.beta2),
          .one_minus_beta2 = float(1 - a.beta2),
          .l2 = a.decoupled ? 0.0f : float(a.weight_decay),
          .decay = a.decoupled ? float(1 - a.lr * a.weight_decay) : 1.0f,
          .neg_step_size = float(-(a.lr / bias_correction1)),
          .bias_correction2_sqrt = float(std::sqrt(bias_correction2)),
          .eps = float(a.eps)};
}

void run_adam_case(const AdamCase& a, int shift) {
  CAPTURE(a.name);
  CAPTURE(shift);
  std::mt19937 rng(1234);
  std::vector<float> p = uniform(rng, kN, -1.0f, 1.0f), m = uniform(rng, kN, -1e-2f, 1e-2f),
                     v = uniform(rng, kN, 0.0f, 1e-4f), v_max = uniform(rng, kN, 0.0f, 2e-4f);
  DeviceArray dp(p, shift), dm(m, shift), dv(v, shift), dv_max(v_max, shift), dg(std::vector<float>(kN), shift);
  for (int64_t t = 1; t <= kSteps; ++t) {
    CAPTURE(t);
    const std::vector<float> g = uniform(rng, kN, -0.1f, 0.1f);
    cpu::adam_update(adam_args<cpu::AdamArgs>(a, t), p.data(), g.data(), m.data(), v.data(),
                     a.amsgrad ? v_max.data() : nullptr);
    dg.upload(g);
    cuda::adam_update(adam_args<cuda::AdamArgs>(a, t), dp.get(), dg.get(), dm.get(), dv.get(),
                      a.amsgrad ? dv_max.get() : nullptr);
    expect_close(dp.download(), p, "p");
    expect_close(dm.download(), m, "m");
    expect_close(dv.download(), v, "v");
    if (a.amsgrad) expect_close(dv_max.download(), v_max, "v_max");
  }
}

struct SgdCase {
  const char* name;
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
};

void run_sgd_case(const SgdCase& s, int shift) {
  CAPTURE(s.name);
  CAPTURE(shift);
  std::mt19937 rng(99);
  std::vector<float> p = uniform(rng, kN, -1.0f, 1.0f), buf = uniform(rng, kN, -1.0f, 1.0f);
  const bool has_buffer = s.momentum != 0;
  DeviceArray dp(p, shift), dbuf(buf, shift), dg(std::vector<float>(kN), shift);
  for (int step = 0; step < kSteps; ++step) {
    CAPTURE(step);
    // As engine/optim/sgd.cpp fills them; the first update sets the buffer to d (the random start
    // is overwritten).
    const cpu::SgdArgs c{.n = kN,
                         .weight_decay = float(s.weight_decay),
                         .momentum = float(s.momentum),
                         .one_minus_dampening = float(1 - s.dampening),
                         .neg_lr = float(-s.lr),
                         .nesterov = s.nesterov,
                         .first = step == 0};
    const cuda::SgdArgs dc{.n = c.n,
                           .weight_decay = c.weight_decay,
                           .momentum = c.momentum,
                           .one_minus_dampening = c.one_minus_dampening,
                           .neg_lr = c.neg_lr,
                           .nesterov = c.nesterov,
                           .first = c.first};
    const std::vector<float> g = uniform(rng, kN, -1.0f, 1.0f);
    cpu::sgd_update(c, p.data(), g.data(), has_buffer ? buf.data() : nullptr);
    dg.upload(g);
    cuda::sgd_update(dc, dp.get(), dg.get(), has_buffer ? dbuf.get() : nullptr);
    expect_close(dp.download(), p, "p");
    if (has_buffer) expect_close(dbuf.download(), buf, "momentum buffer");
  }
}

} // namespace
#endif

TEST_CASE("cuda optim: Adam and AdamW match the CPU kernel step by step") {
  if (no_gpu()) return;
#ifdef PILLARS_HAVE_CUDA
  const AdamCase cases[] = {
      {"Adam", 1e-3, 0.9, 0.98, 1e-8, 0.0, false, false},
      {"Adam, L2 weight decay, AMSGrad", 5e-4, 0.9, 0.999, 1e-6, 1e-2, false, true},
      {"AdamW", 1e-3, 0.9, 0.98, 1e-8, 1e-2, true, false},
      {"AdamW, AMSGrad", 2e-3, 0.8, 0.99, 1e-7, 0.1, true, true},
  };
  for (const AdamCase& a : cases)
    for (int shift : {0, 1}) run_adam_case(a, shift);
#endif
}

TEST_CASE("cuda optim: SGD with momentum and Nesterov matches the CPU kernel step by step") {
  if (no_gpu()) return;
#ifdef PILLARS_HAVE_CUDA
  const SgdCase cases[] = {
      {"SGD, weight decay, no momentum", 0.1, 0.0, 0.0, 1e-2, false},
      {"SGD, momentum with dampening", 0.05, 0.9, 0.1, 1e-4, false},
      {"SGD, Nesterov", 0.05, 0.9, 0.0, 1e-4, true},
  };
  for (const SgdCase& s : cases)
    for (int shift : {0, 1}) run_sgd_case(s, shift);
#endif
}

TEST_CASE("cuda optim: scale matches the CPU kernel") {
  if (no_gpu()) return;
#ifdef PILLARS_HAVE_CUDA
  for (int shift : {0, 1}) {
    CAPTURE(shift);
    std::mt19937 rng(7);
    std::vector<float> x = uniform(rng, kN, -3.0f, 3.0f);
    DeviceArray dx(x, shift);
    cpu::scale({.n = kN, .s = 0.37f}, x.data());
    cuda::scale({.n = kN, .s = 0.37f}, dx.get());
    expect_close(dx.download(), x, "x");
  }
#endif
}

TEST_CASE("cuda optim: gradient accumulation (weighted sums, then the division) matches the CPU kernel") {
  if (no_gpu()) return;
#ifdef PILLARS_HAVE_CUDA
  for (int shift : {0, 1}) {
    CAPTURE(shift);
    std::mt19937 rng(11);
    std::vector<float> acc(kN, 123.0f); // garbage the first batch must overwrite
    DeviceArray dacc(acc, shift);
    const float weights[] = {37.0f, 12.0f, 51.0f};
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<float> g = uniform(rng, kN, -1.0f, 1.0f);
      DeviceArray dg(g, shift);
      const bool first = batch == 0;
      const float* gp = batch == 1 ? nullptr : g.data(); // batch 1: a parameter without a gradient
      cpu::accumulate_weighted({.n = kN, .w = weights[batch], .first = first}, gp, acc.data());
      cuda::accumulate_weighted({.n = kN, .w = weights[batch], .first = first}, batch == 1 ? nullptr : dg.get(),
                                dacc.get());
    }
    cpu::divide({.n = kN, .s = 100.0f}, acc.data());
    cuda::divide({.n = kN, .s = 100.0f}, dacc.get());
    expect_close(dacc.download(), acc, "accumulated gradient");
  }
#endif
}

TEST_CASE("cuda optim: sum of squares matches a double loop and is reproducible") {
  if (no_gpu()) return;
#ifdef PILLARS_HAVE_CUDA
  std::mt19937 rng(5);
  // 0 and 1 element, one partial block, several blocks, and more than the 1024 blocks × 4096
  // elements at which the block count saturates.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, kN, int64_t{5000011}}) {
    CAPTURE(n);
    const std::vector<float> x = uniform(rng, std::max<int64_t>(n, 1), -2.0f, 2.0f);
    double exact = 0;
    for (int64_t i = 0; i < n; ++i) exact += double(x[i]) * double(x[i]);
    DeviceArray dx(x, 0);
    const double first = cuda::sum_of_squares({.n = n}, dx.get());
    const double second = cuda::sum_of_squares({.n = n}, dx.get());
    CHECK(std::memcmp(&first, &second, sizeof(double)) == 0); // same n, same bits
    // Both are fp64 sums of up to 5·10⁶ positive terms in different orders: they agree to far
    // better than 1e-10 relative.
    CHECK(std::fabs(first - exact) <= 1e-10 * exact);
  }
#endif
}
