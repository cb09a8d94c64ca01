// The cuDNN reference backend (kernels/cuda/cudnn_attention.h, cudnn_softmax.h) against our
// kernels on the same inputs, and the engine's routing of attention nodes with kernel = cudnn.
//
// Bounds (relative, ‖cudnn − ours‖ / ‖ours‖ over a whole tensor):
//   attention O, dQ, dK, dV  2e-2. Both sides compute in bf16 with fp32 accumulation from the same
//       inputs (rounded to bf16 identically, round-to-nearest-even), so they differ only by where
//       P and dS are rounded to bf16 (unit roundoff 2^-9 ≈ 2e-3 per element) and by the order of
//       their fp32 sums. Each side is within 2× naive bf16 attention's error of the float64
//       reference (ours: test_cuda_attention; cuDNN: the FlashAttention rule its SDPA is held to),
//       whose relative size on these normal inputs is a few 1e-3; 2e-2 leaves room for the sum of
//       both and would still catch a wrong mask, scale or layout (those give errors of order 1).
//   attention lse            1e-4. The logits come from the same bf16 Q, K with fp32 products;
//       only the summation order of the row sums differs.
//   softmax forward 1e-6, backward 1e-5: both fp32 throughout (CUDNN_SOFTMAX_ACCURATE).
// Masked positions are held exactly: dK, dV rows of padding keys are 0, a batch row with no keys
// has O = 0 and lse = −inf on both sides.
// Written without a GPU; every case passed on an H200 (2026-11-26 and 11-27), after the fixes
// docs/PERFORMANCE.md lists.
//
// Every GPU case prints why it skips where there is no GPU or no cuDNN. The CPU cases (a cudnn
// node on the CPU executor, the refusals of unsupported options) run everywhere.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/op.h"
#include "engine/ops.h"
#include "engine/ops/attention.h"
#include "engine/passes/autodiff.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/cudnn_softmax.h"
#include "runtime/cuda_device.h"
#include "tests/grad_check.h"

#ifdef PILLARS_HAVE_CUDA
#include "kernels/cuda/attention.h"
#include "kernels/cuda/softmax.h"
#endif

using namespace pillars;
using pillars::testing::random_tensor;

namespace {

// q, k, v (B, T, H, D) inputs, optional key lengths, an attention node of `kernel`, and
// L = Σ O ∘ R with its gradients.
struct AttentionGraph {
  Graph g;
  ValueId out = kNoValue, lse = kNoValue;
  std::vector<ValueId> grads;
  AttentionGraph(int64_t B, int64_t Tq, int64_t Tk, int64_t H, int64_t D, bool causal, bool padding,
                 ops::AttentionKernel kernel) {
    const ValueId q = g.input("q", {B, Tq, H, D}), k = g.input("k", {B, Tk, H, D}), v = g.input("v", {B, Tk, H, D});
    ops::AttentionOptions opt;
    opt.causal = causal;
    opt.kernel = kernel;
    if (padding) opt.key_lengths = g.input("len", {B}, DType::i32);
    const ops::AttentionResult r = ops::attention(g, q, k, v, opt);
    out = r.out, lse = r.lse;
    const ValueId loss = ops::sum_all(g, ops::mul(g, out, g.constant(random_tensor(g.shape(out), 5))));
    grads = autodiff(g, loss, {q, k, v});
    g.mark_output(out);
    g.mark_output(lse);
  }
};

} // namespace

TEST_CASE("cudnn attention: a cudnn node refuses to run on the CPU executor") {
  AttentionGraph m(2, 5, 5, 2, 8, true, false, ops::AttentionKernel::cudnn);
  // the backward node carries the kernel too
  bool found_backward = false;
  for (const Node& n : m.g.nodes())
    if (std::string(n.op->name) == "attention_backward") {
      found_backward = true;
      CHECK(params_of<ops::AttentionParams>(n).kernel == ops::AttentionKernel::cudnn);
    }
  CHECK(found_backward);
  Executor ex(m.g);
  ex.bind("q", random_tensor({2, 5, 2, 8}, 1));
  ex.bind("k", random_tensor({2, 5, 2, 8}, 2));
  ex.bind("v", random_tensor({2, 5, 2, 8}, 3));
  CHECK_THROWS_WITH_AS(ex.run(), doctest::Contains("train.attention_backend \"cudnn\" needs train.device \"cuda\""),
                       Error);
}

TEST_CASE("cudnn attention: unsupported options are refused, naming the backend") {
  cuda::CudnnAttentionArgs a;
  a.B = 2, a.H = 2, a.Tq = 10, a.Tk = 10, a.D = 64, a.scale = 0.125f;
#ifdef PILLARS_HAVE_CUDNN
  CHECK_NOTHROW(cuda::cudnn_attention_check(a));
  auto refused = [](cuda::CudnnAttentionArgs x, const char* why) {
    INFO(why);
    CHECK_THROWS_WITH_AS(cuda::cudnn_attention_check(x), doctest::Contains("train.attention_backend \"cudnn\""), Error);
    CHECK_THROWS_WITH_AS(cuda::cudnn_attention_check(x), doctest::Contains(why), Error);
  };
  cuda::CudnnAttentionArgs x = a;
  x.dropout_p = 0.1f;
  refused(x, "dropout");
  x = a, x.emit_probs = true;
  refused(x, "probabilities");
  x = a, x.D = 48;
  refused(x, "head dimension 48");
  x = a, x.causal = true, x.Tq = 20;
  refused(x, "more queries than keys");
  x = a, x.causal = true, x.Tq = 5; // fewer queries than keys: the bottom-right diagonal is supported
  CHECK_NOTHROW(cuda::cudnn_attention_check(x));
  const int32_t lengths[2] = {10, 4}; // only the pointer is looked at
  x.key_lengths = lengths;            // ... but not with key padding (see cudnn_attention_check)
  refused(x, "key padding and fewer queries than keys");
  x.Tq = 10;
  CHECK_NOTHROW(cuda::cudnn_attention_check(x));
#else
  CHECK_FALSE(cuda::cudnn_available());
  MESSAGE("no cuDNN in this build: ", cuda::cudnn_unavailable_reason());
  CHECK_THROWS_WITH_AS(cuda::cudnn_attention_check(a), doctest::Contains("no cuDNN"), Error);
#endif
}

#ifdef PILLARS_HAVE_CUDA

namespace {

bool no_cudnn() {
  if (cuda::cudnn_available()) return false;
  SKIP_TEST(cuda::cudnn_unavailable_reason());
  return true;
}

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : p(cuda_malloc_or_throw(n + 16)), bytes(n) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr; }
  ~DeviceBuffer() {
    if (p) cuda_free(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
  void poison() const { // NaN as float
    const std::vector<unsigned char> nan_bytes(bytes, 0xFF);
    cuda_copy_to_device(p, nan_bytes.data(), bytes);
  }
};

DeviceBuffer upload(const std::vector<float>& x) {
  DeviceBuffer b(x.size() * 4);
  cuda_copy_to_device(b.p, x.data(), x.size() * 4);
  return b;
}

std::vector<float> download(const DeviceBuffer& b, size_t n) {
  std::vector<float> x(n);
  cuda_copy_to_host(x.data(), b.p, n * 4);
  return x;
}

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& e : x) e = d(rng);
  return x;
}

// ‖got − want‖ / ‖want‖ over the finite entries of want (−inf entries must match exactly);
// infinity when got has a NaN or a mismatched infinity.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

struct AttentionCase {
  int64_t B = 2, H = 2, Tq = 1, Tk = 1, D = 64;
  bool causal = false;
  std::vector<int32_t> lengths; // empty: no padding
  std::string name() const {
    std::string s = str_cat("B", B, " H", H, " Tq", Tq, " Tk", Tk, " D", D, causal ? " causal" : "");
    for (int32_t n : lengths) s += str_cat(" len ", n);
    return s;
  }
};

struct AttentionResults {
  std::vector<float> o, lse, dq, dk, dv;
};

// Our bf16 tensor-core kernels (fp32 tensors) or the cuDNN backend, forward then backward with the
// forward's own O and lse.
AttentionResults run_attention(const AttentionCase& c, bool cudnn) {
  const size_t qn = static_cast<size_t>(c.B * c.Tq * c.H * c.D), kn = static_cast<size_t>(c.B * c.Tk * c.H * c.D);
  const size_t rows = static_cast<size_t>(c.B * c.H * c.Tq);
  const DeviceBuffer q = upload(normal(qn, 1)), k = upload(normal(kn, 2)), v = upload(normal(kn, 3)),
                     d_o = upload(normal(qn, 4));
  DeviceBuffer o(qn * 4), lse(rows * 4), dq(qn * 4), dk(kn * 4), dv(kn * 4), lengths(c.lengths.size() * 4);
  for (const DeviceBuffer* b : {&o, &lse, &dq, &dk, &dv}) b->poison();
  if (!c.lengths.empty()) cuda_copy_to_device(lengths.p, c.lengths.data(), c.lengths.size() * 4);
  const int32_t* len = c.lengths.empty() ? nullptr : lengths.as<int32_t>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  if (cudnn) {
    cuda::CudnnAttentionArgs a;
    a.B = c.B, a.H = c.H, a.Tq = c.Tq, a.Tk = c.Tk, a.D = c.D, a.scale = scale, a.causal = c.causal,
    a.key_lengths = len;
    DeviceBuffer workspace(cuda::cudnn_attention_backward_workspace(a));
    cuda::cudnn_attention_forward(a, q.p, k.p, v.p, o.p, lse.as<float>(), nullptr);
    cuda::cudnn_attention_backward(a, q.p, k.p, v.p, o.p, lse.as<float>(), d_o.p, dq.p, dk.p, dv.p, workspace.p);
  } else {
    cuda::AttentionArgs a;
    a.B = c.B, a.H = c.H, a.Tq = c.Tq, a.Tk = c.Tk, a.D = c.D, a.scale = scale, a.causal = c.causal,
    a.key_lengths = len;
    a.precision = cuda::Precision::bf16;
    DeviceBuffer workspace(cuda::attention_backward_workspace(a));
    cuda::attention_forward<float>(a, q.as<float>(), k.as<float>(), v.as<float>(), o.as<float>(), lse.as<float>(),
                                   nullptr);
    cuda::attention_backward<float>(a, q.as<float>(), k.as<float>(), v.as<float>(), o.as<float>(), lse.as<float>(),
                                    d_o.as<float>(), dq.as<float>(), dk.as<float>(), dv.as<float>(), workspace.p);
  }
  cuda_synchronize();
  return {download(o, qn), download(lse, rows), download(dq, qn), download(dk, kn), download(dv, kn)};
}

// Padding keys' rows of dK, dV are exactly 0.
void check_padding_rows_zero(const AttentionCase& c, const std::vector<float>& g, const char* what) {
  if (c.lengths.empty()) return;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = std::max<int64_t>(c.lengths[static_cast<size_t>(b)], 0); j < c.Tk; ++j)
      for (int64_t e = 0; e < c.H * c.D; ++e)
        if (g[static_cast<size_t>((b * c.Tk + j) * c.H * c.D + e)] != 0.0f) {
          FAIL_CHECK(what, ": batch ", b, " key ", j, " (a padding key) has a non-zero gradient");
          return;
        }
}

} // namespace

TEST_CASE("cudnn attention: the cuDNN backend matches our bf16 kernels, forward and backward") {
  if (no_cudnn()) return;
  std::vector<AttentionCase> cases;
  // (Tq, Tk): equal, not multiples of the 64-row tile, fewer queries than keys (the bottom-right
  // causal diagonal), and more queries than keys without the causal mask.
  const int64_t lengths[][2] = {{64, 64}, {100, 100}, {257, 257}, {77, 130}, {130, 77}};
  for (int64_t D : {32, 64, 128})
    for (const auto& tt : lengths)
      for (int variant = 0; variant < 4; ++variant) {
        AttentionCase c;
        c.D = D, c.Tq = tt[0], c.Tk = tt[1];
        c.causal = variant & 1;
        if (c.causal && c.Tq > c.Tk) continue;                   // refused (see the case above)
        if (c.causal && c.Tq != c.Tk && (variant & 2)) continue; // refused too, with key padding
        if (variant & 2) {
          c.B = 3;
          c.lengths = {static_cast<int32_t>(c.Tk), static_cast<int32_t>(std::max<int64_t>(1, c.Tk / 3)), 0};
        }
        cases.push_back(c);
      }
  for (const AttentionCase& c : cases) {
    INFO(c.name());
    const AttentionResults ours = run_attention(c, false), theirs = run_attention(c, true);
    CHECK(relative_error(theirs.o, ours.o) <= 2e-2);
    CHECK(relative_error(theirs.lse, ours.lse) <= 1e-4);
    CHECK(relative_error(theirs.dq, ours.dq) <= 2e-2);
    CHECK(relative_error(theirs.dk, ours.dk) <= 2e-2);
    CHECK(relative_error(theirs.dv, ours.dv) <= 2e-2);
    check_padding_rows_zero(c, theirs.dk, "cuDNN dK");
    check_padding_rows_zero(c, theirs.dv, "cuDNN dV");
  }
}

TEST_CASE("cudnn softmax: cudnnSoftmaxForward/Backward match our softmax kernels") {
  if (no_cudnn()) return;
  for (int64_t cols : {1, 100, 1000, 4096, 10000}) {
    const int64_t rows = std::max<int64_t>(1, 200000 / cols);
    INFO("rows ", rows, " cols ", cols);
    const size_t n = static_cast<size_t>(rows * cols);
    std::vector<float> x = normal(n, 7);
    for (float& e : x) e *= 4.0f;
    const DeviceBuffer dx_in = upload(x), dy = upload(normal(n, 8));
    DeviceBuffer y_ours(n * 4), y_cudnn(n * 4), g_ours(n * 4), g_cudnn(n * 4);
    cuda::softmax_forward({.outer = rows, .len = cols, .inner = 1, .log = false}, dx_in.as<float>(),
                          y_ours.as<float>());
    cuda::cudnn_softmax_forward({.rows = rows, .cols = cols}, dx_in.as<float>(), y_cudnn.as<float>());
    cuda::softmax_backward({.outer = rows, .len = cols, .inner = 1, .log = false}, y_ours.as<float>(), dy.as<float>(),
                           g_ours.as<float>());
    cuda::cudnn_softmax_backward({.rows = rows, .cols = cols}, y_ours.as<float>(), dy.as<float>(), g_cudnn.as<float>());
    cuda_synchronize();
    CHECK(relative_error(download(y_cudnn, n), download(y_ours, n)) <= 1e-6);
    CHECK(relative_error(download(g_cudnn, n), download(g_ours, n)) <= 1e-5);
  }
}

TEST_CASE(
    "cudnn attention: a cudnn node on the CUDA executor matches the pillars node, also replayed as a CUDA graph") {
  if (no_cudnn()) return;
  const Precision precision = cuda_precision();
  cuda_set_precision(Precision::bf16); // our kernels on the tensor cores, as cuDNN always is
  const int64_t B = 3, Tk = 45, H = 2, D = 32;
  for (bool causal : {false, true}) {
    const int64_t Tq = causal ? Tk : 37; // causal with key padding needs Tq = Tk (cudnn_attention_check)
    const std::string what = causal ? "causal" : "not causal";
    INFO(what);
    std::vector<std::vector<float>> results[2];
    for (int kernel = 0; kernel < 2; ++kernel) {
      AttentionGraph m(B, Tq, Tk, H, D, causal, true,
                       kernel ? ops::AttentionKernel::cudnn : ops::AttentionKernel::pillars);
      Executor ex(m.g, Device::cuda);
      ex.enable_graph_capture(true);
      ex.bind("q", random_tensor({B, Tq, H, D}, 1, -2.0f, 2.0f));
      ex.bind("k", random_tensor({B, Tk, H, D}, 2, -2.0f, 2.0f));
      ex.bind("v", random_tensor({B, Tk, H, D}, 3));
      ex.bind("len", Tensor::from_i32({B}, {45, 20, 33}));
      for (int run = 0; run < 3; ++run) { // run 1 warms up, run 2 captures, run 3 replays
        ex.run();
        std::vector<std::vector<float>> r{ex.fetch(m.out).to_vector(), ex.fetch(m.lse).to_vector()};
        for (ValueId g : m.grads) r.push_back(ex.fetch(g).to_vector());
        if (run == 0) {
          results[kernel] = r;
        } else if (kernel == 0) {
          CHECK(r == results[0]); // ours is deterministic, and the replay is the same step
        } else {
          // cuDNN's forward is compared exactly; its backward accumulates dQ with atomics, so a
          // replay may round differently (by about one bf16 unit in a few elements)
          for (size_t i = 0; i < r.size(); ++i) CHECK(relative_error(r[i], results[1][i]) <= (i < 2 ? 0.0 : 5e-3));
        }
      }
      CHECK(ex.replaying_graph());
    }
    const char* names[] = {"O", "lse", "dQ", "dK", "dV"};
    for (size_t i = 0; i < 5; ++i) {
      const std::string name = names[i];
      INFO(name);
      CHECK(relative_error(results[1][i], results[0][i]) <= (i == 1 ? 1e-4 : 2e-2));
    }
  }
  cuda_set_precision(precision);
}

#else

TEST_CASE("cudnn attention: the GPU comparisons in a build without CUDA") {
  SKIP_TEST(cuda::cudnn_unavailable_reason());
}

#endif // PILLARS_HAVE_CUDA
