// The GEMM benchmarks, in one run on the same operands:
//   fp32 (`pillars bench gemm`): our sgemm against OpenBLAS's;
//   bf16 (`pillars bench gemm --precision bf16`): our gemm_bf16 (A and B in bf16, C in fp32)
//        next to our sgemm on the same values widened to fp32, and oneDNN's bf16 GEMM.
//
// Neither library is a build dependency: each is dlopen'ed and its function looked up; if nothing
// loads, only our numbers are shown. OpenBLAS: libopenblas.so.0, then libopenblas.so, then the
// reference-BLAS alternative libblas.so.3, cblas_sgemm, with openblas_set_num_threads when that
// symbol exists. oneDNN (Debian: libdnnl2): libdnnl.so.3, then libdnnl.so.2,
// dnnl_gemm_bf16bf16f32 (row-major, like ours); it threads with the OpenMP runtime we share.
//
// Shapes: 1024³ in all four transpose combinations, the tall-skinny 4096 × 256 × 1024, and the
// products of a transformer training step with 4000 tokens, d_model 256, d_ff 1024 and a 10000-word
// vocabulary (logits x·Wᵀ, the FFN's x·W, and a weight gradient xᵀ·dy, which multiplies by Aᵀ).
// (Names in the table are ASCII so that printf's byte-counted widths line up.)
//
// Each timing is the median of `repeats` runs after one warm-up run (which also lets our packing
// buffers and OpenBLAS's thread pool reach their steady state). The "max rel diff" column is
// max |ours − OpenBLAS| / max |OpenBLAS|, a sanity check that both computed the same thing.
#include "tools/bench/bench_gemm.h"
#include "tools/bench/measure.h"

#include "base/build_info.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"

#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

namespace pillars::bench {
namespace {

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

struct OpenBlas {
  CblasSgemm sgemm = nullptr;
  const char* library = nullptr;
};

OpenBlas load_openblas(int threads) {
  for (const char* name : {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"}) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    auto sgemm = reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm"));
    if (sgemm == nullptr) continue;
    if (auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads")))
      set_threads(threads);
    return OpenBlas{sgemm, name};
  }
  return {};
}

// dnnl_gemm_bf16bf16f32(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), row-major,
// 'N' or 'T'; returns dnnl_status_t (0: success).
using DnnlGemmBf16 = int (*)(char, char, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*,
                             int64_t, float, float*, int64_t);

struct OneDnn {
  DnnlGemmBf16 gemm_bf16 = nullptr;
  const char* library = nullptr;
};

OneDnn load_onednn() {
  for (const char* name : {"libdnnl.so.3", "libdnnl.so.2", "libdnnl.so"}) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    if (auto gemm = reinterpret_cast<DnnlGemmBf16>(dlsym(handle, "dnnl_gemm_bf16bf16f32"))) return OneDnn{gemm, name};
  }
  return {};
}

struct Shape {
  const char* what;
  bool trans_a, trans_b;
  int64_t M, N, K;
};

const Shape kShapes[] = {
    {"square", false, false, 1024, 1024, 1024},
    {"square", false, true, 1024, 1024, 1024},
    {"square", true, false, 1024, 1024, 1024},
    {"square", true, true, 1024, 1024, 1024},
    {"tall-skinny", false, false, 4096, 256, 1024},
    {"logits x*W^T", false, true, 4000, 10000, 256},
    {"ffn x*W", false, false, 4000, 256, 1024},
    {"weight grad x^T*dy", true, false, 256, 1024, 4000},
    {"LM head grad dz^T*x", true, false, 10000, 256, 4000},
};

void bench_shape(const Shape& s, const OpenBlas& blas, int repeats, std::mt19937& rng) {
  // Row-major storage: A is (M, K) or (K, M) when transposed; B is (K, N) or (N, K).
  const int64_t lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N, ldc = s.N;
  const std::vector<float> A = random_floats(s.M * s.K, rng), B = random_floats(s.K * s.N, rng);
  std::vector<float> C(static_cast<size_t>(s.M * s.N)), C_blas(C.size());
  const double gflop = 2.0 * double(s.M) * double(s.N) * double(s.K) * 1e-9;

  const double ours =
      gflop / median_seconds(repeats, [&] {
        cpu::sgemm(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), ldc);
      });
  std::printf("%-19s %c%c %5lld %5lld %5lld  %8.1f", s.what, s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N',
              static_cast<long long>(s.M), static_cast<long long>(s.N), static_cast<long long>(s.K), ours);
  if (blas.sgemm == nullptr) {
    std::printf("\n");
    return;
  }
  const double theirs = gflop / median_seconds(repeats, [&] {
                          blas.sgemm(kCblasRowMajor, s.trans_a ? kCblasTrans : kCblasNoTrans,
                                     s.trans_b ? kCblasTrans : kCblasNoTrans, int(s.M), int(s.N), int(s.K), 1.0f,
                                     A.data(), int(lda), B.data(), int(ldb), 0.0f, C_blas.data(), int(ldc));
                        });
  std::printf("  %8.1f  %5.2fx  %9.1e\n", theirs, ours / theirs, max_rel_diff(C, C_blas));
}

// One shape in bf16: ours in bf16, ours in fp32 on the same (widened) values, oneDNN in bf16.
void bench_shape_bf16(const Shape& s, const OneDnn& dnnl, int repeats, std::mt19937& rng) {
  const int64_t lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N, ldc = s.N;
  std::vector<float> A = random_floats(s.M * s.K, rng), B = random_floats(s.K * s.N, rng);
  std::vector<uint16_t> A16(A.size()), B16(B.size());
  cpu::f32_to_bf16({.n = int64_t(A.size())}, A.data(), A16.data());
  cpu::f32_to_bf16({.n = int64_t(B.size())}, B.data(), B16.data());
  cpu::bf16_to_f32({.n = int64_t(A.size())}, A16.data(), A.data()); // fp32 gets the very same values
  cpu::bf16_to_f32({.n = int64_t(B.size())}, B16.data(), B.data());
  std::vector<float> C32(static_cast<size_t>(s.M * s.N)), C16(C32.size()), C_dnnl(C32.size());
  const double gflop = 2.0 * double(s.M) * double(s.N) * double(s.K) * 1e-9;

  // The three products take turns, one call each per round (interleaved_medians): this machine's
  // speed drifts from minute to minute, and timing them one block after another would put the
  // drift into their ratios.
  int status = 0;
  std::vector<std::function<void()>> products = {[&] {
                                                   cpu::sgemm(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, A.data(), lda,
                                                              B.data(), ldb, 0.0f, C32.data(), ldc);
                                                 },
                                                 [&] {
                                                   cpu::gemm_bf16(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, A16.data(),
                                                                  lda, B16.data(), ldb, 0.0f, C16.data(), ldc);
                                                 }};
  if (dnnl.gemm_bf16 != nullptr)
    products.push_back([&] {
      status = dnnl.gemm_bf16(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.M, s.N, s.K, 1.0f, A16.data(), lda,
                              B16.data(), ldb, 0.0f, C_dnnl.data(), ldc);
    });
  const std::vector<double> seconds = interleaved_medians(repeats, products);
  const double fp32 = gflop / seconds[0], bf16 = gflop / seconds[1];
  std::printf("%-19s %c%c %5lld %5lld %5lld  %8.1f  %8.1f  %5.2fx  %9.1e", s.what, s.trans_a ? 'T' : 'N',
              s.trans_b ? 'T' : 'N', static_cast<long long>(s.M), static_cast<long long>(s.N),
              static_cast<long long>(s.K), fp32, bf16, bf16 / fp32, max_rel_diff(C16, C32));
  if (dnnl.gemm_bf16 == nullptr) {
    std::printf("\n");
    return;
  }
  if (status != 0) {
    std::printf("  oneDNN failed (dnnl_status_t %d)\n", status);
    return;
  }
  const double theirs = gflop / seconds[2];
  std::printf("  %8.1f  %5.2fx  %9.1e\n", theirs, bf16 / theirs, max_rel_diff(C16, C_dnnl));
}

} // namespace

int bench_gemm_bf16(int threads, int repeats) {
  threads = std::max(1, threads);
  repeats = std::max(1, repeats);
  omp_set_num_threads(threads);
  const OneDnn dnnl = load_onednn();
  std::printf("gemm bf16: CPU %s, ISA %s, bf16 path %s, %d thread(s), median of %d runs in turns; GFLOP/s\n",
              cpu_model_name().c_str(), cpu::isa_name(cpu::active_isa()), cpu::gemm_bf16_path(), threads, repeats);
  std::printf("bf16: A and B in bf16, products summed in fp32; fp32: our sgemm on the same values as fp32\n");
  if (dnnl.gemm_bf16 == nullptr)
    std::printf("oneDNN not found (tried libdnnl.so.3, libdnnl.so.2, libdnnl.so): ours only\n");
  else
    std::printf("reference: dnnl_gemm_bf16bf16f32 from %s\n", dnnl.library);
  std::printf("%-19s %-2s %5s %5s %5s  %8s  %8s  %6s  %9s%s\n", "shape", "op", "M", "N", "K", "fp32", "bf16",
              "bf16/fp32", "rel diff", dnnl.gemm_bf16 ? "    onednn  ratio  max rel diff" : "");
  std::mt19937 rng(42);
  for (const Shape& s : kShapes) bench_shape_bf16(s, dnnl, repeats, rng);
  return 0;
}

int bench_gemm(int threads, int repeats) {
  threads = std::max(1, threads);
  repeats = std::max(1, repeats);
  omp_set_num_threads(threads);
  const OpenBlas blas = load_openblas(threads);
  std::printf("sgemm: CPU %s, ISA %s, %d thread(s), median of %d runs; GFLOP/s\n", cpu_model_name().c_str(),
              cpu::isa_name(cpu::active_isa()), threads, repeats);
  if (blas.sgemm == nullptr)
    std::printf("OpenBLAS not found (tried libopenblas.so.0, libopenblas.so, libblas.so.3): ours only\n");
  else
    std::printf("reference: cblas_sgemm from %s\n", blas.library);
  std::printf("%-19s %-2s %5s %5s %5s  %8s%s\n", "shape", "op", "M", "N", "K", "ours",
              blas.sgemm ? "  openblas  ratio  max rel diff" : "");
  std::mt19937 rng(42);
  for (const Shape& s : kShapes) bench_shape(s, blas, repeats, rng);
  return 0;
}

} // namespace pillars::bench
