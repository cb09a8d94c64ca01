// Every engine op on the GPU against the same op on the CPU, in the manner of ggml's
// test-backend-ops: one small graph per case (the op applied to random inputs), its gradient
// graph by autodiff, then the same graphs run by a CPU executor and a CUDA executor. The forward
// output and every input gradient must agree within the bound stated for the case, relative to
// the CPU result's norm: ‖gpu − cpu‖ / ‖cpu‖. The loss is Σ y ∘ w with random w, so each
// backward op sees a non-trivial upstream gradient.
//
// Bounds, in fp32 mode (every product in fp32 on both sides; only the summation order differs):
//   elementwise, shape ops, dropout, embedding forward        1e-6 (identical arithmetic)
//   reductions, sum_to, softmax, layer norm, cross-entropy    1e-5 (order of fp32 sums)
//   matmul (cuBLAS pedantic fp32 vs our blocked SGEMM)        1e-5
//   linear_act (cuBLASLt pedantic fp32 + epilogue vs SGEMM)    1e-5
//   attention                                                 1e-5
// In bf16 mode the products round their operands to 8 bits of mantissa: 2e-2.
//
// On a machine without a GPU every case prints why it is skipped.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "engine/ops/cast.h"
#include "ght/ops.h"
#include "engine/passes/autodiff.h"
#include "runtime/cuda_device.h"
#include "kernels/cuda/softmax.h" // (a build without CUDA has only its inline parts: softmax_cluster_split)

using namespace pillars;
using pillars::testing::no_gpu;

namespace {

// kernels/cuda/softmax.h's cluster switch (a build without CUDA has neither kernels nor switch).
bool softmax_clusters_available() {
#ifdef PILLARS_HAVE_CUDA
  return cuda::softmax_clusters_available();
#else
  return false;
#endif
}
bool set_softmax_clusters([[maybe_unused]] bool on) {
#ifdef PILLARS_HAVE_CUDA
  return cuda::set_softmax_clusters(on);
#else
  return false;
#endif
}
int64_t softmax_cluster_launches() {
#ifdef PILLARS_HAVE_CUDA
  return cuda::softmax_cluster_launches();
#else
  return 0;
#endif
}

// A case under construction: the graph, the host values of its leaves, and which f32 leaves
// get gradients.
struct Case {
  Graph g;
  std::vector<std::pair<ValueId, Tensor>> leaves;
  std::vector<ValueId> wrt;
  std::mt19937 rng{1234};

  ValueId input(const Shape& shape, bool differentiable = true, float lo = -2.0f, float hi = 2.0f) {
    const ValueId v = g.input(str_cat("x", leaves.size()), shape);
    std::uniform_real_distribution<float> dist(lo, hi);
    Tensor t = Tensor::empty(shape);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    leaves.emplace_back(v, t);
    if (differentiable) wrt.push_back(v);
    return v;
  }
  ValueId ints(const Shape& shape, int lo, int hi) {
    const ValueId v = g.input(str_cat("i", leaves.size()), shape, DType::i32);
    std::uniform_int_distribution<int> dist(lo, hi);
    Tensor t = Tensor::empty(shape, DType::i32);
    int32_t* p = t.data<int32_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    leaves.emplace_back(v, t);
    return v;
  }
  ValueId ints_from(const Shape& shape, const std::vector<int32_t>& values) {
    const ValueId v = g.input(str_cat("i", leaves.size()), shape, DType::i32);
    leaves.emplace_back(v, Tensor::from_i32(shape, values));
    return v;
  }
};

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]) && std::isfinite(want[i])) return INFINITY;
    if (std::isfinite(want[i])) {
      diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
      norm += static_cast<double>(want[i]) * want[i];
    }
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Builds the case's output y with `build`, adds loss = Σ y ∘ w and its gradient, runs both
// executors and compares y and every gradient.
void check_op(const std::string& name, double bound, const std::function<ValueId(Case&)>& build,
              bool expect_all_on_gpu = true) {
  CAPTURE(name);
  Case c;
  const ValueId y = build(c);
  std::vector<ValueId> compare{y};
  if (!c.wrt.empty()) {
    const ValueId w = c.input(c.g.shape(y), false);
    const ValueId loss = ops::sum_all(c.g, ops::mul(c.g, y, w));
    for (ValueId gv : autodiff(c.g, loss, c.wrt))
      if (gv != kNoValue) compare.push_back(gv);
  }
  for (ValueId v : compare) c.g.mark_output(v);

  Executor cpu(c.g);
  Executor gpu(c.g, Device::cuda);
  for (auto& [leaf, value] : c.leaves) {
    cpu.bind(leaf, value);
    gpu.bind(leaf, value);
  }
  cpu.run();
  gpu.run();
  if (expect_all_on_gpu)
    CHECK_MESSAGE(gpu.host_fallback_ops().empty(), "ran on the host: ", gpu.host_fallback_ops().front());
  for (size_t k = 0; k < compare.size(); ++k) {
    const double err = relative_error(gpu.fetch(compare[k]).to_vector(), cpu.value(compare[k]).to_vector());
    CAPTURE(k); // 0: the output, then the gradients of the inputs in order
    CHECK(err <= bound);
  }
}

} // namespace

TEST_CASE("cuda ops: elementwise, broadcasting and activations match the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  const double exact = 1e-6;
  check_op("add same shape", exact, [](Case& c) { return ops::add(c.g, c.input({7, 33}), c.input({7, 33})); });
  check_op("add bias", exact, [](Case& c) { return ops::add(c.g, c.input({5, 6, 40}), c.input({40})); });
  check_op("sub bias first", exact, [](Case& c) { return ops::sub(c.g, c.input({40}), c.input({5, 6, 40})); });
  check_op("mul middle broadcast", exact, [](Case& c) {
    return ops::mul(c.g, c.input({4, 1, 9}), c.input({4, 7, 9}));
  });
  check_op("div outer", exact, [](Case& c) {
    return ops::div(c.g, c.input({3, 5, 1}), c.input({1, 5, 6}, true, 0.5f, 2.0f));
  });
  check_op("scale", exact, [](Case& c) { return ops::scale(c.g, c.input({1000}), -0.37f); });
  check_op("add_scalar", exact, [](Case& c) { return ops::add_scalar(c.g, c.input({1000}), 2.5f); });
  check_op("exp", exact, [](Case& c) { return ops::exp(c.g, c.input({513})); });
  check_op("log", exact, [](Case& c) { return ops::log(c.g, c.input({513}, true, 0.1f, 4.0f)); });
  check_op("sqrt", exact, [](Case& c) { return ops::sqrt(c.g, c.input({513}, true, 0.1f, 4.0f)); });
  check_op("tanh", exact, [](Case& c) { return ops::tanh(c.g, c.input({513})); });
  check_op("relu", exact, [](Case& c) { return ops::relu(c.g, c.input({64, 65})); });
  check_op("leaky_relu", exact, [](Case& c) { return ops::leaky_relu(c.g, c.input({64, 65}), 0.01f); });
  check_op("gelu", 1e-6, [](Case& c) { return ops::gelu(c.g, c.input({64, 65})); });
  check_op("fill then add", exact, [](Case& c) {
    return ops::add(c.g, c.input({3, 4}), ops::fill(c.g, {3, 4}, 1.5f));
  });
  check_op("broadcast_to", exact, [](Case& c) { return ops::broadcast_to(c.g, c.input({3, 1, 5}), {2, 3, 4, 5}); });
  check_op("sum_to rows", 1e-5, [](Case& c) { return ops::sum_to(c.g, c.input({300, 70}), {70}); });
  check_op("sum_to general", 1e-5, [](Case& c) { return ops::sum_to(c.g, c.input({6, 5, 7}), {6, 1, 7}); });
  // Rounding to nearest even on both sides: bit for bit (bound 0), over more than one grid.
  check_op("cast to bf16 and back", 0.0, [](Case& c) {
    return ops::cast(c.g, ops::cast(c.g, c.input({1000003}, true, -300.0f, 300.0f), DType::bf16), DType::f32);
  });
}

TEST_CASE("cuda ops: cast gives the CPU's bf16 bits for every kind of float, NaN and infinities included") {
  if (no_gpu()) return;
  // check_op's relative error skips non-finite values, so this compares bits: ties both ways, a
  // carry into the exponent, overflow, ±0, subnormals, ±infinity and NaNs with payloads (the CPU
  // keeps a NaN's sign and payload and sets the quiet bit), then 2^20 random patterns.
  std::vector<uint32_t> bits = {0x3F800000u, 0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0x3FFFFFFFu,
                                0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u, 0x807FFFFFu,
                                0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0xFFC00000u, 0x7FBFFFFFu};
  std::mt19937 rng(5);
  while (bits.size() < (1u << 20)) bits.push_back(static_cast<uint32_t>(rng()));
  const int64_t n = static_cast<int64_t>(bits.size());
  Tensor x = Tensor::empty({n});
  std::memcpy(x.data<float>(), bits.data(), bits.size() * sizeof(uint32_t));
  Graph g;
  const ValueId in = g.input("x", {n});
  const ValueId narrow = ops::cast(g, in, DType::bf16);
  g.mark_output(narrow);
  Executor cpu(g), gpu(g, Device::cuda);
  cpu.bind("x", x);
  gpu.bind("x", x);
  cpu.run();
  gpu.run();
  CHECK(gpu.host_fallback_ops().empty()); // else the CPU would be compared with itself
  const Tensor want = cpu.value(narrow), got = gpu.fetch(narrow);
  int64_t mismatched = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (got.data<uint16_t>()[i] != want.data<uint16_t>()[i] && mismatched++ == 0) first = i;
  if (first >= 0) {
    char line[96];
    std::snprintf(line, sizeof line, "first mismatch: f32 0x%08x gave 0x%04x on the GPU, 0x%04x on the CPU",
                  bits[static_cast<size_t>(first)], unsigned{got.data<uint16_t>()[first]},
                  unsigned{want.data<uint16_t>()[first]});
    MESSAGE(std::string(line));
  }
  CHECK(mismatched == 0);
}

TEST_CASE("cuda ops: reductions and shape ops match the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  check_op("sum last axis", 1e-5, [](Case& c) { return ops::sum(c.g, c.input({9, 1000}), 1); });
  check_op("mean middle axis", 1e-5, [](Case& c) { return ops::mean(c.g, c.input({4, 77, 6}), 1); });
  check_op("max last axis", 1e-6, [](Case& c) { return ops::max(c.g, c.input({12, 31}), 1); });
  check_op("max first axis", 1e-6, [](Case& c) { return ops::max(c.g, c.input({31, 12}), 0); });
  check_op("permute 0213", 1e-6, [](Case& c) { return ops::permute(c.g, c.input({2, 5, 3, 8}), {0, 2, 1, 3}); });
  check_op("permute 3 axes", 1e-6, [](Case& c) { return ops::permute(c.g, c.input({4, 6, 7}), {2, 0, 1}); });
  check_op("slice", 1e-6, [](Case& c) { return ops::slice(c.g, c.input({4, 10, 3}), 1, 2, 7); });
  check_op("concat", 1e-6, [](Case& c) { return ops::concat(c.g, {c.input({2, 3, 5}), c.input({2, 4, 5})}, 1); });
  check_op("reshape then transpose", 1e-6, [](Case& c) {
    return ops::transpose(c.g, ops::reshape(c.g, c.input({6, 10}), {3, 2, 10}), 0, 2);
  });
}

TEST_CASE("cuda ops: matmul in every transpose and batch form matches the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::string flags = str_cat(ta ? "T" : "N", tb ? "T" : "N");
      check_op("matmul 2-D " + flags, 1e-5, [&](Case& c) {
        return ops::matmul(c.g, c.input(ta ? Shape{37, 19} : Shape{19, 37}),
                           c.input(tb ? Shape{23, 37} : Shape{37, 23}), ta, tb);
      });
      check_op("matmul batched " + flags, 1e-5, [&](Case& c) {
        return ops::matmul(c.g, c.input(ta ? Shape{3, 2, 16, 9} : Shape{3, 2, 9, 16}),
                           c.input(tb ? Shape{3, 2, 11, 16} : Shape{3, 2, 16, 11}), ta, tb);
      });
      check_op("matmul shared weight " + flags, 1e-5, [&](Case& c) {
        return ops::matmul(c.g, c.input(ta ? Shape{4, 16, 9} : Shape{4, 9, 16}),
                           c.input(tb ? Shape{11, 16} : Shape{16, 11}), ta, tb);
      });
    }
  check_op("linear", 1e-5, [](Case& c) {
    return ops::linear(c.g, c.input({5, 7, 64}), c.input({48, 64}), c.input({48}));
  });
}

TEST_CASE("cuda ops: linear_act (cuBLASLt bias/ReLU epilogues) matches the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  for (const ops::Activation act : {ops::Activation::relu, ops::Activation::gelu}) {
    const std::string name = act == ops::Activation::gelu ? "gelu" : "relu";
    check_op("linear_act " + name, 1e-5, [&](Case& c) {
      return ops::linear_act(c.g, c.input({5, 7, 64}), c.input({48, 64}), c.input({48}), act).y;
    });
    // Odd extents: rows of x and W of 37 floats (only 4-byte aligned), out no multiple of 8.
    check_op("linear_act odd " + name, 1e-5, [&](Case& c) {
      return ops::linear_act(c.g, c.input({3, 37}), c.input({45, 37}), c.input({45}), act).y;
    });
    check_op("linear_act pre " + name, 1e-5, [&](Case& c) { // gelu: pre is read too, so its gradient path runs
      const ops::LinearAct la = ops::linear_act(c.g, c.input({2, 9, 32}), c.input({40, 32}), c.input({40}), act);
      return la.pre == kNoValue ? la.y : ops::add(c.g, la.y, la.pre);
    });
  }
}

TEST_CASE("cuda ops: cuBLASLt's GELU epilogue is a GELU, exact or the tanh form") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  // linear_act uses CUBLASLT_EPILOGUE_GELU_AUX_BIAS only under PILLARS_CUBLASLT_GELU=1: its
  // documentation does not say whether it is the erf GELU or the tanh approximation. This prints
  // which (a relative error near 1e-7 means exact; near 1e-4 means the tanh form).
  setenv("PILLARS_CUBLASLT_GELU", "1", 1);
  Case c;
  const ValueId y =
      ops::linear_act(c.g, c.input({4, 33, 64}), c.input({64, 64}), c.input({64}), ops::Activation::gelu).y;
  c.g.mark_output(y);
  Executor cpu(c.g);
  Executor gpu(c.g, Device::cuda);
  for (auto& [leaf, value] : c.leaves) {
    cpu.bind(leaf, value);
    gpu.bind(leaf, value);
  }
  cpu.run();
  gpu.run();
  const double err = relative_error(gpu.fetch(y).to_vector(), cpu.value(y).to_vector());
  unsetenv("PILLARS_CUBLASLT_GELU");
  // The tanh form differs from the exact GELU by at most ~2e-4 of |x| (relative error ~1e-4 here);
  // anything past 1e-3 is not a GELU at all.
  CHECK(err <= 1e-3);
  MESSAGE("CUBLASLT_EPILOGUE_GELU_AUX_BIAS vs the exact GELU on the CPU: relative error ", err,
          std::string(err <= 1e-5 ? " (exact: it may become linear_act's default)"
                                  : " (not the exact GELU: keep the BIAS epilogue)"));
}

TEST_CASE("cuda ops: a row split over a cluster is covered exactly, in aligned slices a block can hold") {
  // Runs everywhere: the arithmetic of kernels/cuda/softmax.h that the cluster kernels rely on.
  for (int64_t len = 8193; len <= 16 * 8192; ++len) {
    const cuda::ClusterSplit split = cuda::softmax_cluster_split(len);
    const bool ok = split.blocks == (len + 8191) / 8192 && split.blocks <= 16 && split.chunk % 4 == 0 &&
                    split.chunk <= 8192 && int64_t{split.blocks} * split.chunk >= len && // every element has a block
                    int64_t{split.blocks - 1} * split.chunk < len;                       // and every block an element
    if (!ok) {
      CAPTURE(len);
      CAPTURE(split.blocks);
      CAPTURE(split.chunk);
      FAIL("bad split");
    }
  }
  CHECK(cuda::softmax_cluster_split(8200).chunk == 4100);
  CHECK(cuda::softmax_cluster_split(20000).chunk == 6668);
}

TEST_CASE("cuda ops: softmax, layer norm, cross-entropy, embedding, dropout, masked_fill match the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  // Every kernel of kernels/cuda/softmax.cu: rows in registers (≤ 8192), parked in shared memory
  // (20000, 9999 without 16-byte units, 40000 forward only), and two passes (40000 backward, 70000).
  // Without 16-byte units (a length not a multiple of 4) too: one warp with several floats per lane
  // (999), the 256-thread register layout (5001), and two passes (70001). On Hopper, rows of 8k–128k
  // go to the cluster kernels (8200: two slices of 4100; 9999; 20000; 40000; 70000 and 70001 in
  // clusters of 9 blocks where the GPU can schedule them), so those lengths run twice there, with
  // the clusters and without, and the cluster launches are counted; 300 rows of 20000 make each
  // cluster walk several rows (both halves of the double-buffered exchange); rows of −inf make
  // whole slices and whole rows that see nothing.
  const bool clusters = softmax_clusters_available();
  MESSAGE(std::string(clusters ? "softmax: this GPU runs the cluster kernels too"
                               : "softmax: no cluster kernels on this GPU"));
  for (const bool use_clusters : {false, true}) {
    if (use_clusters && !clusters) continue;
    CAPTURE(use_clusters);
    const bool before = set_softmax_clusters(use_clusters);
    for (int64_t len : {1, 7, 32, 100, 999, 1000, 5000, 5001, 8200, 9999, 20000, 40000, 70000, 70001}) {
      if (use_clusters && (len <= 8192 || len > 131072)) continue;
      const int64_t launched = softmax_cluster_launches();
      check_op(str_cat("softmax len ", len), 1e-5, [&](Case& c) { return ops::softmax(c.g, c.input({3, len}), -1); });
      check_op(str_cat("log_softmax len ", len), 1e-5, [&](Case& c) {
        return ops::log_softmax(c.g, c.input({3, len}), -1);
      });
      if (!use_clusters)
        CHECK(softmax_cluster_launches() == launched);
      else if (len <= 65536)
        CHECK(softmax_cluster_launches() > launched); // clusters of ≤ 8 blocks always fit
      else
        MESSAGE("softmax len ", len, ": ",
                softmax_cluster_launches() > launched ? "clusters of 9 blocks" : "no 9-block clusters here");
    }
    check_op("softmax 300 rows of 20000", 1e-5, [&](Case& c) { return ops::softmax(c.g, c.input({300, 20000}), -1); });
    check_op("log_softmax 300 rows of 20000", 1e-5, [&](Case& c) {
      return ops::log_softmax(c.g, c.input({300, 20000}), -1);
    });
    // Row 0: its first 6700 elements −inf (the whole first slice of three); row 1: all −inf.
    check_op("softmax rows of 20000 with -inf slices", 1e-5, [&](Case& c) {
      const ValueId x = c.input({3, 20000});
      float* v = c.leaves.back().second.data<float>();
      std::fill(v, v + 6700, -INFINITY);
      std::fill(v + 20000, v + 40000, -INFINITY);
      return ops::softmax(c.g, x, -1);
    });
    set_softmax_clusters(before);
  }
  check_op("softmax middle axis", 1e-5, [](Case& c) { return ops::softmax(c.g, c.input({3, 17, 5}), 1); });
  for (int64_t D : {8, 64, 512, 1000, 2048}) {
    check_op(str_cat("layer_norm D ", D), 1e-5, [&](Case& c) {
      return ops::layer_norm(c.g, c.input({2, 9, D}), c.input({D}), c.input({D}), 1e-5f);
    });
  }
  check_op("layer_norm without affine", 1e-5, [](Case& c) {
    return ops::layer_norm(c.g, c.input({33, 40}), kNoValue, kNoValue, 1e-5f);
  });
  for (float eps : {0.0f, 0.1f}) {
    check_op(str_cat("cross_entropy smoothing ", eps), 1e-5, [&](Case& c) {
      return ops::cross_entropy(c.g, c.input({37, 1003}),
                                c.ints_from({37},
                                            [] {
                                              std::vector<int32_t> t(37);
                                              for (int i = 0; i < 37; ++i)
                                                t[static_cast<size_t>(i)] =
                                                    i % 5 == 0 ? 1 : (i * 97) % 1003; // 1 is ignore_index
                                              return t;
                                            }()),
                                eps, 1);
    });
  }
  // The other team sizes of the cross-entropy row kernels: 16-byte units (V a multiple of 4), 256
  // threads a row (V > 1024) and 512 (V > 16384); and a batch whose every target is ignored (loss 0,
  // gradient 0: the CPU's answer).
  for (const Shape& shape : {Shape{5, 4096}, Shape{3, 2001}, Shape{3, 20001}}) {
    check_op(str_cat("cross_entropy V ", shape[1]), 1e-5, [&](Case& c) {
      return ops::cross_entropy(c.g, c.input(shape), c.ints({shape[0]}, 0, static_cast<int>(shape[1]) - 1), 0.1f, 0);
    });
  }
  check_op("cross_entropy all ignored", 1e-6, [](Case& c) {
    return ops::cross_entropy(c.g, c.input({4, 50}), c.ints_from({4}, {3, 3, 3, 3}), 0.1f, 3);
  });
  check_op("embedding", 1e-5, [](Case& c) { return ops::embedding(c.g, c.input({50, 24}), c.ints({6, 9}, 0, 49)); });
  check_op("dropout", 1e-6, [](Case& c) { return ops::dropout(c.g, c.input({5, 333}), 0.3f, 77, 12); });
  check_op("masked_fill", 1e-6, [](Case& c) {
    return ops::masked_fill(c.g, c.input({2, 3, 7}), c.ints({2, 1, 7}, 0, 1), -1e9f);
  });
}

TEST_CASE("cuda ops: fused attention matches the CPU in fp32 mode") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  struct Shape5 {
    int64_t B, Tq, Tk, H, D;
    bool causal;
    float dropout;
  };
  for (const Shape5 s : {Shape5{2, 9, 9, 2, 16, false, 0.0f}, Shape5{2, 40, 40, 3, 32, true, 0.0f},
                         Shape5{3, 17, 70, 2, 64, false, 0.0f}, Shape5{2, 65, 65, 2, 64, true, 0.2f},
                         Shape5{1, 1, 130, 1, 128, false, 0.0f}}) {
    check_op(str_cat("attention B", s.B, " Tq", s.Tq, " Tk", s.Tk, " H", s.H, " D", s.D, s.causal ? " causal" : "",
                     " p", s.dropout),
             1e-5, [&](Case& c) {
               ops::AttentionOptions opt;
               opt.causal = s.causal;
               opt.dropout = s.dropout;
               opt.seed = 5;
               std::vector<int32_t> lengths(static_cast<size_t>(s.B), static_cast<int32_t>(s.Tk));
               lengths[0] = static_cast<int32_t>(std::max<int64_t>(1, s.Tk / 2));
               opt.key_lengths = c.ints_from({s.B}, lengths);
               return ops::attention(c.g, c.input({s.B, s.Tq, s.H, s.D}), c.input({s.B, s.Tk, s.H, s.D}),
                                     c.input({s.B, s.Tk, s.H, s.D}), opt)
                   .out;
             });
  }
}

TEST_CASE("cuda ops: bf16 mode stays within bf16 rounding of the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::bf16);
  check_op("matmul bf16", 2e-2, [](Case& c) { return ops::matmul(c.g, c.input({3, 64, 96}), c.input({96, 80})); });
  check_op("linear_act bf16", 2e-2, [](Case& c) {
    return ops::linear_act(c.g, c.input({3, 64, 96}), c.input({80, 96}), c.input({80}), ops::Activation::gelu).y;
  });
  check_op("attention bf16", 2e-2, [](Case& c) {
    return ops::attention(c.g, c.input({2, 100, 4, 64}), c.input({2, 100, 4, 64}), c.input({2, 100, 4, 64})).out;
  });
  cuda_set_precision(Precision::fp32);
}

TEST_CASE("cuda ops: GHT's head_gram and the composed attention (attention_mask) match the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  // head_gram sums over tokens in a different order (chunks of 256 tokens, doubles): 1e-5.
  for (const Shape& s : {Shape{2, 5, 3, 4}, Shape{4, 300, 8, 64}, Shape{3, 70, 16, 130}}) {
    check_op(str_cat("head_gram ", shape_str(s)), 1e-5, [&](Case& c) {
      std::vector<int32_t> lengths(static_cast<size_t>(s[0]), static_cast<int32_t>(s[1]));
      lengths[0] = static_cast<int32_t>(s[1] / 2 + 1);
      return ops::head_gram(c.g, c.input(s), c.ints_from({s[0]}, lengths));
    });
  }
  check_op("head_gram without lengths", 1e-5, [](Case& c) { return ops::head_gram(c.g, c.input({2, 9, 4, 8})); });
  for (bool causal : {false, true}) {
    check_op(str_cat("attention_reference", causal ? " causal" : ""), 1e-5, [&](Case& c) {
      ops::AttentionOptions opt;
      opt.causal = causal;
      opt.key_lengths = c.ints_from({2}, {9, 4});
      return ops::attention_reference(c.g, c.input({2, 7, 2, 16}), c.input({2, 9, 2, 16}), c.input({2, 9, 2, 16}), opt);
    });
  }
}

TEST_CASE("cuda ops: an op without a CUDA kernel runs through the host fallback") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  // GHT's head_mean has only a CPU kernel: the GPU executor copies its input out and its output back.
  check_op(
      "head_mean via the host", 1e-5,
      [](Case& c) {
        return ght::head_mean(c.g, c.input({2, 5, 3, 4}));
      },
      /*expect_all_on_gpu=*/false);
}
