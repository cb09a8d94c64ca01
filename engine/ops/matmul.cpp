// Matrix products on kernels/cpu/gemm_precision.h: sgemm in fp32, or on operands rounded to bf16
// when the CPU's matmul precision is bf16 (train.precision). The backward's products below are
// matmul nodes too, so they follow the same precision.
//
// With Ā = op(A), B̄ = op(B) and C = Ā B̄, the gradients are dĀ = dC B̄ᵀ and dB̄ = Āᵀ dC, i.e.
//   A not transposed:  dA = dC · op(B)ᵀ         A transposed:  dA = op(B) · dCᵀ
//   B not transposed:  dB = op(A)ᵀ · dC         B transposed:  dB = dCᵀ · op(A)
// each of which is again one matmul with suitable transpose flags (no explicit transposes).
// In the mixed form (A batched, B 2-D) dB sums over the batch: op(A)'s rows are flattened first
// (after a transpose when A is transposed), and a transposed A's gradient is computed transposed.
#include "engine/ops/matmul.h"

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/shape.h"
#include "kernels/cpu/gemm_precision.h"

namespace pillars::ops {

namespace {

struct MatmulDims {
  int64_t batch, M, N, K;
  bool b_shared; // B is 2-D and shared by every batch
};

MatmulDims matmul_dims(const Shape& a, const Shape& b, bool ta, bool tb) {
  PILLARS_CHECK(a.size() >= 2 && b.size() >= 2, "matmul: operands must have rank >= 2, got ", shape_str(a), " and ",
                shape_str(b));
  const size_t ra = a.size(), rb = b.size();
  MatmulDims d;
  d.M = ta ? a[ra - 1] : a[ra - 2];
  const int64_t ka = ta ? a[ra - 2] : a[ra - 1];
  d.K = tb ? b[rb - 1] : b[rb - 2];
  d.N = tb ? b[rb - 2] : b[rb - 1];
  PILLARS_CHECK(ka == d.K, "matmul: inner extents differ: ", shape_str(a), (ta ? "ᵀ" : ""), " · ", shape_str(b),
                (tb ? "ᵀ" : ""));
  d.b_shared = rb == 2;
  if (!d.b_shared) {
    PILLARS_CHECK(ra == rb && std::equal(a.begin(), a.end() - 2, b.begin()),
                  "matmul: batch axes differ: ", shape_str(a), " and ", shape_str(b));
  }
  d.batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) d.batch *= a[i];
  return d;
}

std::vector<OutputSpec> infer_matmul(const Graph& g, const Node& n) {
  detail::expect_f32("matmul", g, n.inputs[0]);
  detail::expect_f32("matmul", g, n.inputs[1]);
  const Shape& a = g.shape(n.inputs[0]);
  const MatmulParams& p = params_of<MatmulParams>(n);
  const MatmulDims d = matmul_dims(a, g.shape(n.inputs[1]), p.trans_a, p.trans_b);
  Shape out(a.begin(), a.end() - 2);
  out.push_back(d.M);
  out.push_back(d.N);
  return {{out, DType::f32}};
}

void matmul_cpu(const KernelContext& c) {
  const MatmulParams& p = params_of<MatmulParams>(c.node);
  const bool ta = p.trans_a, tb = p.trans_b;
  const MatmulDims d = matmul_dims(c.in[0].shape(), c.in[1].shape(), ta, tb);
  const float* A = c.in[0].data<float>();
  const float* B = c.in[1].data<float>();
  float* C = c.out[0].data<float>();
  const int64_t lda = ta ? d.M : d.K, ldb = tb ? d.K : d.N;
  const float alpha = p.alpha;
  if (d.b_shared && !ta) { // all batches' rows at once: one big GEMM
    cpu::gemm_at_precision(false, tb, d.batch * d.M, d.N, d.K, alpha, A, lda, B, ldb, 0.0f, C, d.N);
    return;
  }
  cpu::gemm_at_precision_batched(ta, tb, d.batch, d.M, d.N, d.K, alpha, A, lda, d.M * d.K, B, ldb,
                                 d.b_shared ? 0 : d.K * d.N, 0.0f, C, d.N, d.M * d.N);
}

ValueId matmul_scaled(Graph& g, ValueId a, ValueId b, bool ta, bool tb, float alpha);

std::vector<ValueId> matmul_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go,
                                const std::vector<bool>& needs) {
  const ValueId A = n.inputs[0], B = n.inputs[1], dC = go[0];
  const MatmulParams& p = params_of<MatmulParams>(n);
  const bool ta = p.trans_a, tb = p.trans_b;
  const float alpha = p.alpha;
  const bool b_shared = g.shape(B).size() == 2 && g.shape(A).size() > 2;
  ValueId dA = kNoValue, dB = kNoValue;
  if (needs[0]) {
    if (!ta)
      dA = matmul_scaled(g, dC, B, false, !tb, alpha);
    else if (!b_shared)
      dA = matmul_scaled(g, B, dC, tb, true, alpha);
    else
      dA = transpose(g, matmul_scaled(g, dC, B, false, !tb, alpha), -1, -2); // dAᵀ = dC · op(B)ᵀ, per batch
  }
  if (needs[1]) {
    ValueId a = A, dc = dC;
    bool a_trans = ta;
    if (b_shared) {                        // flatten the batch into rows so that one product sums over it
      if (ta) a = transpose(g, A, -1, -2); // (..., M, K): rows of op(A)
      a = reshape(g, a, {-1, g.shape(a).back()});
      dc = reshape(g, dC, {-1, g.shape(dC).back()});
      a_trans = false;
    }
    dB = tb ? matmul_scaled(g, dc, a, true, a_trans, alpha) : matmul_scaled(g, a, dc, !a_trans, false, alpha);
  }
  return {dA, dB};
}

std::string print_matmul(const Node& n) {
  const MatmulParams& p = params_of<MatmulParams>(n);
  return str_cat(p.trans_a ? " trans_a" : "", p.trans_b ? " trans_b" : "",
                 p.alpha != 1.0f ? str_cat(" alpha=", p.alpha) : "");
}

// C (..., M, N) = op(A) (..., M, K) · op(B): 2·K FLOPs per element of C.
NodeFlops flops_matmul(const Graph& g, const Node& n) {
  const Shape a = g.shape(n.inputs[0]);
  const int64_t K = params_of<MatmulParams>(n).trans_a ? a[a.size() - 2] : a.back();
  return {.matmul = 2.0 * static_cast<double>(K) * static_cast<double>(numel(g.shape(n.outputs[0])))};
}

} // namespace

const OpDef kMatmul{.name = "matmul",
                    .infer = infer_matmul,
                    .cpu = matmul_cpu,
                    .cuda = PILLARS_CUDA_KERNEL(matmul),
                    .vjp = matmul_vjp,
                    .print = print_matmul,
                    .flops = flops_matmul};

namespace {
ValueId matmul_scaled(Graph& g, ValueId a, ValueId b, bool ta, bool tb, float alpha) {
  return g.add1(kMatmul, {a, b}, MatmulParams{.trans_a = ta, .trans_b = tb, .alpha = alpha});
}
} // namespace

ValueId matmul(Graph& g, ValueId a, ValueId b, bool trans_a, bool trans_b) {
  return matmul_scaled(g, a, b, trans_a, trans_b, 1.0f);
}

ValueId linear(Graph& g, ValueId x, ValueId w, ValueId b) {
  PILLARS_CHECK(g.shape(w).size() == 2 && g.shape(x).back() == g.shape(w)[1], "linear: input ", shape_str(g.shape(x)),
                " does not match weight ", shape_str(g.shape(w)), " (out, in)");
  ValueId y = matmul(g, x, w, false, true); // (..., in) · (out, in)ᵀ
  return b == kNoValue ? y : add(g, y, b);
}

} // namespace pillars::ops
