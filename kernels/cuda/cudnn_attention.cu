// The cuDNN reference backend for attention (cudnn_attention.h): cuDNN's fused flash attention,
// forward and backward, built with the cuDNN graph (backend) API — descriptors created, set and
// finalized by hand (cudnnBackendCreateDescriptor / SetAttribute / Finalize), no cudnn-frontend.
// cuDNN 9.x has no single descriptor for masked attention that works on Hopper (its
// OPERATION_SDPA_FWD/BWD descriptors take no causal mask before 9.21), so we build the graph that
// cuDNN's runtime fusion engine recognizes as flash attention, out of matmul, pointwise, reduction
// and reshape operations — the graph cudnn-frontend's SDPA nodes emit.
//
// SHAPES. Our tensors are (B, T, H, D) row-major; cuDNN sees them as (B, H, T, D) with strides
// (T·H·D, D, H·D, 1). Kᵀ and Vᵀ are the same bytes as K and V seen as (B, H, D, Tk) with strides
// (Tk·H·D, D, 1, H·D). lse is cuDNN's "stats" (B, H, Tq, 1) with strides (H·Tq, Tq, 1, 1) — our
// (B, H, Tq) exactly. Key padding uses cuDNN's padding mask: seq_len_q, seq_len_kv (B, 1, 1, 1)
// int32 in the workspace (seq_len_q = Tq, seq_len_kv = key_lengths clamped to [1, Tk]).
// The fused engine wants bf16 operands: fp32 Q, K, V (and O, dO) are converted into the workspace
// and O (dQ, dK, dV) back; the conversion back also writes our zeros where cuDNN leaves rows
// unwritten or meaningless (keys past key_lengths; batch rows whose key length is 0, which see
// nothing: O = 0, lse = −inf, no gradient).
//
// THE FORWARD GRAPH (uids in Uid below; "virtual" tensors live only inside the fused kernel):
//   S    = matmul(Q, Kᵀ)                       fp32 (B, H, Tq, Tk)  [M, N overridden by seq_len_q/kv]
//   S    = S · scale                            (scale: a by-value fp32 scalar)
//   [padding] r = gen_index(S, axis 2), c = gen_index(S, axis 3),
//          keep = (r < seq_len_q) and (c < seq_len_kv),  S = keep ? S : lowest float
//   [causal]  r = gen_index(S, 2) [+ Tk − Tq, as "+ Tk" then "− Tq"], c = gen_index(S, 3),
//          keep = r ≥ c,  S = keep ? S : lowest float
//   m = max_j S,  E = exp(S − m),  z = Σ_j E,  stats = m + log z  (→ lse),  P = E / z  (bf16)
//   O    = matmul(P, V)                         [M overridden by seq_len_q, K by seq_len_kv]
// THE BACKWARD GRAPH (FlashAttention-2's, with dQ accumulated in fp32 by cuDNN):
//   softmax_sum = Σ_d dO ∘ O · 1                fp32 (B, H, Tq, 1), in the workspace
//   S = matmul(Q, Kᵀ) · scale, [padding mask], S − stats, [padding mask again — cuDNN needs the
//   padding value re-applied after the stats, as cudnn-frontend does], [causal mask], P = exp(·)
//   dV   = matmul(reshape(P)ᵀ as bf16, dO)
//   dP   = matmul(dO, Vᵀ) · 1,  dS = (dP − softmax_sum) ∘ P · scale
//   dK   = matmul(reshape(dS)ᵀ as bf16, Q)
//   dQ_accum = matmul(dS, reshape(Kᵀ) = K)      fp32 (B, H, Tq, D), in the workspace
//   dQ   = identity(dQ_accum)
// Every tensor's data type, the by-value scalars and the operation order follow cudnn-frontend's
// SDPA nodes (cuDNN 9.x), so that the heuristics find the fused engine.
//
// PLANS. Building a graph, asking the heuristics (mode A, then the fallback list) and finalizing
// an execution plan takes milliseconds to seconds (some engines compile at run time), so finalized
// plans are cached, keyed by pass, B, H, Tq, Tk, D, causal and padding; the softmax scale is a
// by-value input of each execution. The first call for a key (the executor's warm-up run, or its
// workspace query) builds the plan; a CUDA graph capture then records cudnnBackendExecute's work.
//
// WORKSPACE (256-byte aligned regions): the bf16 copies, seq_len_q/kv, a copy of lse with −inf
// replaced by 0 (rows that see nothing would otherwise give exp(lowest − (−inf)) = NaN), cuDNN's
// softmax_sum and dQ_accum, then cuDNN's own plan workspace.
#include "kernels/cuda/cudnn_attention.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cuda/cudnn_graph.cuh"
#include "kernels/cuda/cudnn_internal.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {

// ---- checked calls, the handle, availability -------------------------------------------------------

void cudnn_check(cudnnStatus_t status, const char* what, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[1024] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  throw Error(str_cat("cuDNN error in ", what, " (", file, ":", line, "): ", cudnnGetErrorString(status),
                      detail[0] ? str_cat(" (", detail, ")") : std::string()));
}

cudnnHandle_t cudnn_handle() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t created = nullptr;
    PILLARS_CUDNN_CHECK(cudnnCreate(&created));
    PILLARS_CUDNN_CHECK(cudnnSetStream(created, stream()));
    return created;
  }();
  return h;
}

namespace {

std::string version_text(size_t v) { return str_cat(v / 10000, ".", v / 100 % 100, ".", v % 100); }

std::string find_unavailable_reason() {
  if (cuda_device_count() == 0) return cuda_unavailable_reason();
  const size_t loaded = cudnnGetVersion();
  if (loaded / 10000 != CUDNN_MAJOR)
    return str_cat("the loaded cuDNN library is version ", version_text(loaded),
                   ", but this build of pillars was compiled against ", version_text(CUDNN_VERSION),
                   " (a different major version)");
  const cudaDeviceProp& prop = device_properties();
  if (prop.major < 8)
    return str_cat("cuDNN's fused attention needs an sm_80 or newer GPU; ", prop.name, " is sm_", prop.major,
                   prop.minor);
  try {
    cudnn_handle();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string& unavailable_reason() {
  static const std::string reason = find_unavailable_reason();
  return reason;
}

} // namespace

bool cudnn_available() { return unavailable_reason().empty(); }
std::string cudnn_unavailable_reason() { return unavailable_reason(); }
std::string cudnn_version_string() {
  return str_cat(version_text(cudnnGetVersion()), " (built against ", version_text(CUDNN_VERSION), ")");
}

void require_cudnn(const char* who) {
  PILLARS_CHECK(cudnn_available(), who, ": the cuDNN backend is unavailable: ", unavailable_reason());
}

namespace {

using namespace cudnn_graph;

// The unique ids of the graphs' real tensors (below cudnn_graph::kFirstConstantUid, from which the
// by-value constants — lowest float, 1, Tk, Tq — and then the virtual tensors are numbered).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kSeqQ, kSeqKV, kdO, kdQ, kdK, kdV, kSoftmaxSum, kdQAccum };

// ---- the attention graphs ------------------------------------------------------------------------------

struct Key {
  bool backward;
  int64_t B, H, Tq, Tk, D;
  bool causal, padding;
  auto tie() const { return std::tie(backward, B, H, Tq, Tk, D, causal, padding); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

std::string describe(const Key& k) {
  return str_cat("attention ", k.backward ? "backward" : "forward", " (B ", k.B, ", H ", k.H, ", Tq ", k.Tq, ", Tk ",
                 k.Tk, ", D ", k.D, k.causal ? ", causal" : "", k.padding ? ", key padding" : "", ")");
}

// The shapes both graphs share.
struct Layouts {
  Dims q_dims, q_strides;     // Q, O, dO, dQ: (B, H, Tq, D) over (B, Tq, H, D) memory
  Dims k_dims, k_strides;     // K, V, dK, dV: (B, H, Tk, D)
  Dims kt_dims, kt_strides;   // Kᵀ, Vᵀ: (B, H, D, Tk), the same memory
  Dims s_dims, s_strides;     // S, P: (B, H, Tq, Tk), packed
  Dims st_dims, st_strides;   // Pᵀ, dSᵀ: (B, H, Tk, Tq) over S's memory
  Dims row_dims, row_strides; // stats, row sums: (B, H, Tq, 1)
  Dims len_dims, len_strides; // seq_len_q/kv: (B, 1, 1, 1)
  explicit Layouts(const Key& k) {
    const int64_t B = k.B, H = k.H, Tq = k.Tq, Tk = k.Tk, D = k.D;
    q_dims = {B, H, Tq, D}, q_strides = {Tq * H * D, D, H * D, 1};
    k_dims = {B, H, Tk, D}, k_strides = {Tk * H * D, D, H * D, 1};
    kt_dims = {B, H, D, Tk}, kt_strides = {Tk * H * D, D, 1, H * D};
    s_dims = {B, H, Tq, Tk}, s_strides = {H * Tq * Tk, Tq * Tk, Tk, 1};
    st_dims = {B, H, Tk, Tq}, st_strides = {H * Tq * Tk, Tq * Tk, 1, Tk};
    row_dims = {B, H, Tq, 1}, row_strides = {H * Tq, Tq, 1, 1};
    len_dims = {B, 1, 1, 1}, len_strides = {1, 1, 1, 1};
  }
};

// S = keep ? S : lowest, keep = (row < seq_len_q) and (col < seq_len_kv).
const TensorDesc& padding_mask(GraphBuilder& g, const TensorDesc& s, const TensorDesc& seq_q,
                               const TensorDesc& seq_kv) {
  const TensorDesc& row =
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_INT32, 2);
  const TensorDesc& col =
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_INT32, 3);
  const TensorDesc& row_in =
      g.pointwise(CUDNN_POINTWISE_CMP_LT, row, &seq_q, nullptr, CUDNN_DATA_BOOLEAN, CUDNN_DATA_BOOLEAN);
  const TensorDesc& col_in =
      g.pointwise(CUDNN_POINTWISE_CMP_LT, col, &seq_kv, nullptr, CUDNN_DATA_BOOLEAN, CUDNN_DATA_BOOLEAN);
  const TensorDesc& keep =
      g.pointwise(CUDNN_POINTWISE_LOGICAL_AND, row_in, &col_in, nullptr, CUDNN_DATA_BOOLEAN, CUDNN_DATA_BOOLEAN);
  const TensorDesc& lowest = g.constant_f32(std::numeric_limits<float>::lowest());
  return g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, &lowest, &keep, CUDNN_DATA_FLOAT);
}

// S = keep ? S : lowest, keep = row + (Tk − Tq) ≥ col: the causal diagonal through the
// bottom-right corner, from the padded lengths (not the per-batch key lengths — our definition).
const TensorDesc& causal_mask(GraphBuilder& g, const TensorDesc& s, const Key& k) {
  const TensorDesc* row =
      &g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_FLOAT, 2);
  const TensorDesc& col =
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_FLOAT, 3);
  if (k.Tq != k.Tk) {
    const TensorDesc& tk = g.constant_i32(static_cast<int32_t>(k.Tk));
    row = &g.pointwise(CUDNN_POINTWISE_ADD, *row, &tk, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_INT32);
    const TensorDesc& tq = g.constant_i32(static_cast<int32_t>(k.Tq));
    row = &g.pointwise(CUDNN_POINTWISE_SUB, *row, &tq, nullptr, CUDNN_DATA_INT32, CUDNN_DATA_INT32);
  }
  const TensorDesc& keep =
      g.pointwise(CUDNN_POINTWISE_CMP_GE, *row, &col, nullptr, CUDNN_DATA_BOOLEAN, CUDNN_DATA_BOOLEAN);
  const TensorDesc& lowest = g.constant_f32(std::numeric_limits<float>::lowest());
  return g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, &lowest, &keep, CUDNN_DATA_FLOAT);
}

// What both graphs start with: their inputs Q, Kᵀ, the statistics, the scale and the sequence
// lengths (with padding), and S = scale · Q Kᵀ before any mask.
struct Scores {
  const TensorDesc &q, &kt, &stats, &scale;
  const TensorDesc *seq_q, *seq_kv; // null without padding
  const TensorDesc& s;
};

Scores scaled_scores(GraphBuilder& g, const Layouts& l, const Key& k) {
  const TensorDesc& q = g.real(kQ, l.q_dims, l.q_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& kt = g.real(kK, l.kt_dims, l.kt_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& stats = g.real(kStats, l.row_dims, l.row_strides, CUDNN_DATA_FLOAT);
  const TensorDesc& scale = g.by_value(kScale, CUDNN_DATA_FLOAT);
  const TensorDesc* seq_q = k.padding ? &g.real(kSeqQ, l.len_dims, l.len_strides, CUDNN_DATA_INT32) : nullptr;
  const TensorDesc* seq_kv = k.padding ? &g.real(kSeqKV, l.len_dims, l.len_strides, CUDNN_DATA_INT32) : nullptr;
  const TensorDesc& qk = g.virt(l.s_dims, l.s_strides, CUDNN_DATA_FLOAT);
  g.matmul(q, kt, qk, seq_q, seq_kv, nullptr);
  const TensorDesc& s = g.pointwise(CUDNN_POINTWISE_MUL, qk, &scale, nullptr, CUDNN_DATA_FLOAT);
  return Scores{q, kt, stats, scale, seq_q, seq_kv, s};
}

std::unique_ptr<Plan> build_forward(const Key& k) {
  auto plan = std::make_unique<Plan>();
  GraphBuilder g(*plan);
  const Layouts l(k);
  const Scores c = scaled_scores(g, l, k);
  const TensorDesc &stats = c.stats, *seq_q = c.seq_q, *seq_kv = c.seq_kv;
  const TensorDesc& v = g.real(kV, l.k_dims, l.k_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& o = g.real(kO, l.q_dims, l.q_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc* s = &c.s;
  if (k.padding) s = &padding_mask(g, *s, *seq_q, *seq_kv);
  if (k.causal) s = &causal_mask(g, *s, k);
  // softmax with its statistics
  const TensorDesc& m = g.virt(l.row_dims, l.row_strides, CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, *s, m);
  const TensorDesc& shifted = g.pointwise(CUDNN_POINTWISE_SUB, *s, &m, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& e = g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& z = g.virt(l.row_dims, l.row_strides, CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
  const TensorDesc& log_z = g.pointwise(CUDNN_POINTWISE_LOG, z, nullptr, nullptr, CUDNN_DATA_FLOAT);
  g.pointwise(CUDNN_POINTWISE_ADD, m, &log_z, nullptr, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, -1, &stats);
  const TensorDesc& p = g.pointwise(CUDNN_POINTWISE_DIV, e, &z, nullptr, CUDNN_DATA_BFLOAT16); // bmm2's A: the io type
  g.matmul(p, v, o, seq_q, nullptr, seq_kv);
  g.build(describe(k));
  return plan;
}

std::unique_ptr<Plan> build_backward(const Key& k) {
  auto plan = std::make_unique<Plan>();
  GraphBuilder g(*plan);
  const Layouts l(k);
  const Scores c = scaled_scores(g, l, k);
  const TensorDesc &q = c.q, &kt = c.kt, &stats = c.stats, &scale = c.scale, *seq_q = c.seq_q, *seq_kv = c.seq_kv;
  const TensorDesc& vt = g.real(kV, l.kt_dims, l.kt_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& o = g.real(kO, l.q_dims, l.q_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& d_o = g.real(kdO, l.q_dims, l.q_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& dq = g.real(kdQ, l.q_dims, l.q_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& dk = g.real(kdK, l.k_dims, l.k_strides, CUDNN_DATA_BFLOAT16);
  const TensorDesc& dv = g.real(kdV, l.k_dims, l.k_strides, CUDNN_DATA_BFLOAT16);
  const Dims packed_q_strides{l.q_dims[1] * l.q_dims[2] * l.q_dims[3], l.q_dims[2] * l.q_dims[3], l.q_dims[3], 1};

  // softmax_sum = rowsum(dO ∘ O) · 1 (the 1 is where dropout's 1 − p would go)
  const TensorDesc& do_o = g.pointwise(CUDNN_POINTWISE_MUL, d_o, &o, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& row_sum = g.virt(l.row_dims, l.row_strides, CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum);
  const TensorDesc& one_a = g.constant_f32(1.0f);
  const TensorDesc& softmax_sum = g.real(kSoftmaxSum, l.row_dims, l.row_strides, CUDNN_DATA_FLOAT);
  g.pointwise(CUDNN_POINTWISE_MUL, row_sum, &one_a, nullptr, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, -1, &softmax_sum);

  // P recomputed from the saved statistics; dV = Pᵀ dO
  const TensorDesc* s = &c.s;
  if (k.padding) s = &padding_mask(g, *s, *seq_q, *seq_kv);
  s = &g.pointwise(CUDNN_POINTWISE_SUB, *s, &stats, nullptr, CUDNN_DATA_FLOAT);
  if (k.padding) s = &padding_mask(g, *s, *seq_q, *seq_kv);
  if (k.causal) s = &causal_mask(g, *s, k);
  const TensorDesc& p = g.pointwise(CUDNN_POINTWISE_EXP, *s, nullptr, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& pt = g.reshape(p, l.st_dims, l.st_strides, CUDNN_DATA_BFLOAT16);
  g.matmul(pt, d_o, dv, seq_kv, nullptr, seq_q);

  // dS = (dP − softmax_sum) ∘ P · scale,  dP = dO Vᵀ · 1;  dK = dSᵀ Q
  const TensorDesc& dp0 = g.virt(l.s_dims, l.s_strides, CUDNN_DATA_FLOAT);
  g.matmul(d_o, vt, dp0, seq_q, seq_kv, nullptr);
  const TensorDesc& one_b = g.constant_f32(1.0f);
  const TensorDesc& dp = g.pointwise(CUDNN_POINTWISE_MUL, dp0, &one_b, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& dp_centered = g.pointwise(CUDNN_POINTWISE_SUB, dp, &softmax_sum, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& ds_unscaled = g.pointwise(CUDNN_POINTWISE_MUL, dp_centered, &p, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& ds = g.pointwise(CUDNN_POINTWISE_MUL, ds_unscaled, &scale, nullptr, CUDNN_DATA_FLOAT);
  const TensorDesc& dst = g.reshape(ds, l.st_dims, l.st_strides, CUDNN_DATA_BFLOAT16);
  g.matmul(dst, q, dk, seq_kv, nullptr, seq_q);

  // dQ = dS K, accumulated in fp32 (dQ_accum, in the workspace), then written as bf16
  const TensorDesc& k_again = g.reshape(kt, l.k_dims, l.k_strides, CUDNN_DATA_FLOAT);
  const TensorDesc& dq_accum = g.real(kdQAccum, l.q_dims, packed_q_strides, CUDNN_DATA_FLOAT);
  g.matmul(ds, k_again, dq_accum, seq_q, nullptr, seq_kv);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, nullptr, nullptr, CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, -1, &dq);
  g.build(describe(k));
  return plan;
}

// Finalized plans, built once per key, alive for the process (never destroyed: at exit the CUDA
// context may already be gone when static destructors would run).
const Plan& plan_for(const Key& k) {
  static std::mutex mutex;
  static auto* cache = new std::map<Key, std::unique_ptr<Plan>>;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Plan>& slot = (*cache)[k];
  if (!slot) slot = k.backward ? build_backward(k) : build_forward(k);
  return *slot;
}

Key key_of(const CudnnAttentionArgs& a, bool backward) {
  return Key{backward, a.B, a.H, a.Tq, a.Tk, a.D, a.causal, a.key_lengths != nullptr};
}

// ---- the workspace ---------------------------------------------------------------------------------------

constexpr size_t kAlign = 256;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Byte offsets of the workspace regions (a region that is not needed has 0 bytes).
struct Workspace {
  size_t q = 0, k = 0, v = 0, o = 0, d_o = 0, dq = 0, dk = 0, dv = 0; // bf16 copies
  size_t seq_q = 0, seq_kv = 0, lse = 0, softmax_sum = 0, dq_accum = 0, cudnn = 0, total = 0;
};

Workspace workspace_layout(const CudnnAttentionArgs& a, bool backward, int64_t cudnn_bytes) {
  const size_t q_bytes = static_cast<size_t>(a.B * a.Tq * a.H * a.D) * 2,
               k_bytes = static_cast<size_t>(a.B * a.Tk * a.H * a.D) * 2;
  const size_t rows = static_cast<size_t>(a.B * a.H * a.Tq);
  Workspace w;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t offset = at;
    at += aligned(bytes);
    return offset;
  };
  if (!a.bf16_io) {
    w.q = take(q_bytes), w.k = take(k_bytes), w.v = take(k_bytes), w.o = take(q_bytes);
    if (backward) w.d_o = take(q_bytes), w.dq = take(q_bytes), w.dk = take(k_bytes), w.dv = take(k_bytes);
  }
  if (a.key_lengths) w.seq_q = take(static_cast<size_t>(a.B) * 4), w.seq_kv = take(static_cast<size_t>(a.B) * 4);
  if (backward) {
    w.lse = take(rows * 4);
    w.softmax_sum = take(rows * 4);
    w.dq_accum = take(rows * static_cast<size_t>(a.D) * 4);
  }
  w.cudnn = take(static_cast<size_t>(cudnn_bytes));
  w.total = at;
  return w;
}

// The scratch block behind calls without a workspace: it only grows, and a block it outgrows is
// kept (never freed), because a captured CUDA graph may still name its address.
void* scratch(size_t bytes) {
  static std::mutex mutex;
  static void* block = nullptr;
  static size_t size = 0;
  static std::vector<void*> retired;
  std::lock_guard<std::mutex> lock(mutex);
  if (bytes <= size) return block;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  PILLARS_CUDA_CHECK(cudaStreamIsCapturing(stream(), &capturing));
  PILLARS_CHECK(capturing == cudaStreamCaptureStatusNone, "attention (cuDNN): the forward's workspace (", bytes,
                " bytes) would have to grow during a CUDA graph capture; run the step once before capturing it");
  if (block) retired.push_back(block);
  size = std::max(bytes, size + size / 4);
  block = device_alloc(size);
  return block;
}

// ---- conversion kernels ------------------------------------------------------------------------------------

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 8));
}

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x)
    y[e] = __float2bfloat16_rn(x[e]);
}

// Which rows of a (B, T, H·D) tensor hold results: every row of a batch row that sees some key
// (queries: O, dQ), or the keys below that batch row's key length (keys: dK, dV).
enum class Rows { queries, keys };

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// y = x (bf16) on the rows that hold results, 0 elsewhere (x may be y: each element is read, then
// written, by one thread).
template <class Out>
__global__ void store_rows_kernel(const __nv_bfloat16* x, Out* y, int64_t B, int64_t T, int64_t row,
                                  const int32_t* lengths, Rows rows) {
  const int64_t n = B * T * row;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    bool keep = true;
    if (lengths) {
      const int64_t t = e / row % T, b = e / (row * T);
      keep = rows == Rows::queries ? lengths[b] > 0 : t < lengths[b];
    }
    y[e] = keep ? from_f32<Out>(__bfloat162float(x[e])) : from_f32<Out>(0.0f);
  }
}

// seq_len_q = Tq; seq_len_kv = key_lengths clamped to [1, Tk] (a batch row with no keys is given
// one, and its results are replaced by ours afterwards: no zero-length sequences reach cuDNN).
__global__ void sequence_lengths_kernel(const int32_t* lengths, int32_t* seq_q, int32_t* seq_kv, int64_t B, int32_t Tq,
                                        int32_t Tk) {
  for (int64_t b = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; b < B; b += int64_t{gridDim.x} * blockDim.x) {
    seq_q[b] = Tq;
    seq_kv[b] = min(max(lengths[b], 1), Tk);
  }
}

// lse of the rows of batch rows without keys = −inf (forward).
__global__ void empty_rows_lse_kernel(float* lse, const int32_t* lengths, int64_t B, int64_t rows_per_batch) {
  const int64_t n = B * rows_per_batch;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x)
    if (lengths[e / rows_per_batch] <= 0) lse[e] = -INFINITY;
}

// The backward's statistics: lse with −inf (rows that see nothing) replaced by 0.
__global__ void finite_lse_kernel(const float* lse, float* out, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x)
    out[e] = isinf(lse[e]) ? 0.0f : lse[e];
}

void to_bf16(const void* x, void* y, int64_t n) {
  if (n == 0) return;
  to_bf16_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<const float*>(x), static_cast<__nv_bfloat16*>(y),
                                                         n);
  PILLARS_CUDA_LAUNCHED("cudnn_attention_to_bf16");
}

// The results back into the caller's tensor (float, or bf16 in place), with our zeros.
void store_rows(const void* bf16, void* out, bool bf16_io, int64_t B, int64_t T, int64_t row, const int32_t* lengths,
                Rows rows) {
  const int64_t n = B * T * row;
  if (n == 0) return;
  const auto* x = static_cast<const __nv_bfloat16*>(bf16);
  if (bf16_io) {
    if (!lengths) return; // cuDNN wrote the caller's tensor, and every row holds results
    store_rows_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, static_cast<__nv_bfloat16*>(out), B, T, row, lengths,
                                                              rows);
  } else {
    store_rows_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, static_cast<float*>(out), B, T, row, lengths, rows);
  }
  PILLARS_CUDA_LAUNCHED("cudnn_attention_store_rows");
}

// ---- running a plan --------------------------------------------------------------------------------------

struct Binding {
  int64_t uid;
  void* data;
};

void execute(const Plan& plan, std::vector<Binding> bindings, void* workspace) {
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  for (const Binding& b : bindings) uids.push_back(b.uid), pointers.push_back(b.data);
  for (const Constant& c : plan.constants)
    uids.push_back(c.uid), pointers.push_back(const_cast<void*>(static_cast<const void*>(&c.value)));
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  pack.set(PILLARS_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()),
           uids.data());
  pack.set(PILLARS_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR,
           static_cast<int64_t>(pointers.size()), pointers.data());
  pack.set(PILLARS_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  PILLARS_CUDNN_CHECK(cudnnBackendExecute(cudnn_handle(), plan.plan, pack.get()));
}

char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

} // namespace

// ---- the API ---------------------------------------------------------------------------------------------------

void cudnn_attention_check(const CudnnAttentionArgs& a) {
  constexpr const char* who = "attention with train.attention_backend \"cudnn\"";
  constexpr const char* instead = "; use train.attention_backend \"pillars\" or \"naive\" instead";
  PILLARS_CHECK(a.dropout_p == 0.0f, who, ": attention dropout (p = ", a.dropout_p,
                ") is not supported: cuDNN draws its dropout masks from its own Philox stream, not ours, so its "
                "results could not be compared with our kernels'; set the attention dropout to 0",
                instead);
  PILLARS_CHECK(!a.emit_probs, who,
                ": the attention probabilities (GHT's feature map A) are not available from cuDNN's fused kernel, "
                "which never forms them",
                instead);
  PILLARS_CHECK(a.D == 32 || a.D == 64 || a.D == 128, who, ": head dimension ", a.D,
                " is not supported (32, 64 or 128)", instead);
  PILLARS_CHECK(!a.causal || a.Tq <= a.Tk, who, ": causal attention with more queries than keys (Tq ", a.Tq, " > Tk ",
                a.Tk, ") is not supported: cuDNN aligns the causal diagonal bottom-right only when Tq <= Tk", instead);
  // Measured on an H200 (cuDNN 9.14): with key padding and Tq < Tk, cuDNN's causal result is not
  // ours (relative error ~1 in O, lse and the gradients), though each alone matches. Not
  // established why; likely, the fused engine takes our spelled-out diagonal for its own
  // bottom-right causal mask, which with padding it aligns per batch row (seq_len_kv[b] −
  // seq_len_q[b], as cudnn-frontend's reference implementation does), not to Tk − Tq.
  PILLARS_CHECK(!a.causal || a.Tq == a.Tk || a.key_lengths == nullptr, who,
                ": causal attention with key padding and fewer queries than keys (Tq ", a.Tq, " < Tk ", a.Tk,
                ") is not supported: cuDNN's result differs from ours there", instead);
  PILLARS_CHECK(a.B >= 1 && a.H >= 1 && a.Tq >= 1 && a.Tk >= 1, who, ": empty shape (B ", a.B, ", H ", a.H, ", Tq ",
                a.Tq, ", Tk ", a.Tk, ")");
  PILLARS_CHECK(a.Tq <= std::numeric_limits<int32_t>::max() && a.Tk <= std::numeric_limits<int32_t>::max(), who,
                ": sequence too long");
  PILLARS_CHECK(a.scale > 0.0f && std::isfinite(a.scale), who, ": softmax scale ", a.scale, " is not positive");
}

size_t cudnn_attention_forward_workspace(const CudnnAttentionArgs& a) {
  cudnn_attention_check(a);
  require_cudnn("attention (cuDNN)");
  return workspace_layout(a, false, plan_for(key_of(a, false)).workspace).total;
}

size_t cudnn_attention_backward_workspace(const CudnnAttentionArgs& a) {
  cudnn_attention_check(a);
  require_cudnn("attention_backward (cuDNN)");
  return workspace_layout(a, true, plan_for(key_of(a, true)).workspace).total;
}

void cudnn_attention_forward(const CudnnAttentionArgs& a, const void* Q, const void* K, const void* V, void* O,
                             float* lse, void* workspace) {
  cudnn_attention_check(a);
  require_cudnn("attention (cuDNN)");
  const Plan& plan = plan_for(key_of(a, false));
  const Workspace w = workspace_layout(a, false, plan.workspace);
  if (!workspace) workspace = scratch(w.total);
  const int64_t qn = a.B * a.Tq * a.H * a.D, kn = a.B * a.Tk * a.H * a.D;
  void *q = const_cast<void*>(Q), *k = const_cast<void*>(K), *v = const_cast<void*>(V), *o = O;
  if (!a.bf16_io) {
    q = at(workspace, w.q), k = at(workspace, w.k), v = at(workspace, w.v), o = at(workspace, w.o);
    to_bf16(Q, q, qn);
    to_bf16(K, k, kn);
    to_bf16(V, v, kn);
  }
  float scale = a.scale;
  std::vector<Binding> bindings{{kQ, q}, {kK, k}, {kV, v}, {kO, o}, {kStats, lse}, {kScale, &scale}};
  if (a.key_lengths) {
    int32_t* seq_q = reinterpret_cast<int32_t*>(at(workspace, w.seq_q));
    int32_t* seq_kv = reinterpret_cast<int32_t*>(at(workspace, w.seq_kv));
    sequence_lengths_kernel<<<grid_for(a.B), kThreads, 0, stream()>>>(
        a.key_lengths, seq_q, seq_kv, a.B, static_cast<int32_t>(a.Tq), static_cast<int32_t>(a.Tk));
    PILLARS_CUDA_LAUNCHED("cudnn_attention_sequence_lengths");
    bindings.push_back({kSeqQ, seq_q});
    bindings.push_back({kSeqKV, seq_kv});
  }
  execute(plan, std::move(bindings), at(workspace, w.cudnn));
  store_rows(o, O, a.bf16_io, a.B, a.Tq, a.H * a.D, a.key_lengths, Rows::queries);
  if (a.key_lengths) {
    empty_rows_lse_kernel<<<grid_for(a.B * a.H * a.Tq), kThreads, 0, stream()>>>(lse, a.key_lengths, a.B, a.H * a.Tq);
    PILLARS_CUDA_LAUNCHED("cudnn_attention_empty_rows_lse");
  }
}

void cudnn_attention_backward(const CudnnAttentionArgs& a, const void* Q, const void* K, const void* V, const void* O,
                              const float* lse, const void* dO, void* dQ, void* dK, void* dV, void* workspace) {
  cudnn_attention_check(a);
  require_cudnn("attention_backward (cuDNN)");
  const Plan& plan = plan_for(key_of(a, true));
  const Workspace w = workspace_layout(a, true, plan.workspace);
  if (!workspace) workspace = scratch(w.total);
  const int64_t qn = a.B * a.Tq * a.H * a.D, kn = a.B * a.Tk * a.H * a.D, rows = a.B * a.H * a.Tq;
  void *q = const_cast<void*>(Q), *k = const_cast<void*>(K), *v = const_cast<void*>(V), *o = const_cast<void*>(O);
  void *d_o = const_cast<void*>(dO), *dq = dQ, *dk = dK, *dv = dV;
  if (!a.bf16_io) {
    q = at(workspace, w.q), k = at(workspace, w.k), v = at(workspace, w.v), o = at(workspace, w.o);
    d_o = at(workspace, w.d_o), dq = at(workspace, w.dq), dk = at(workspace, w.dk), dv = at(workspace, w.dv);
    to_bf16(Q, q, qn);
    to_bf16(K, k, kn);
    to_bf16(V, v, kn);
    to_bf16(O, o, qn);
    to_bf16(dO, d_o, qn);
  }
  float* stats = reinterpret_cast<float*>(at(workspace, w.lse));
  finite_lse_kernel<<<grid_for(rows), kThreads, 0, stream()>>>(lse, stats, rows);
  PILLARS_CUDA_LAUNCHED("cudnn_attention_finite_lse");
  float scale = a.scale;
  std::vector<Binding> bindings{{kQ, q},
                                {kK, k},
                                {kV, v},
                                {kO, o},
                                {kdO, d_o},
                                {kStats, stats},
                                {kdQ, dq},
                                {kdK, dk},
                                {kdV, dv},
                                {kScale, &scale},
                                {kSoftmaxSum, at(workspace, w.softmax_sum)},
                                {kdQAccum, at(workspace, w.dq_accum)}};
  if (a.key_lengths) {
    int32_t* seq_q = reinterpret_cast<int32_t*>(at(workspace, w.seq_q));
    int32_t* seq_kv = reinterpret_cast<int32_t*>(at(workspace, w.seq_kv));
    sequence_lengths_kernel<<<grid_for(a.B), kThreads, 0, stream()>>>(
        a.key_lengths, seq_q, seq_kv, a.B, static_cast<int32_t>(a.Tq), static_cast<int32_t>(a.Tk));
    PILLARS_CUDA_LAUNCHED("cudnn_attention_sequence_lengths");
    bindings.push_back({kSeqQ, seq_q});
    bindings.push_back({kSeqKV, seq_kv});
  }
  execute(plan, std::move(bindings), at(workspace, w.cudnn));
  store_rows(dq, dQ, a.bf16_io, a.B, a.Tq, a.H * a.D, a.key_lengths, Rows::queries);
  store_rows(dk, dK, a.bf16_io, a.B, a.Tk, a.H * a.D, a.key_lengths, Rows::keys);
  store_rows(dv, dV, a.bf16_io, a.B, a.Tk, a.H * a.D, a.key_lengths, Rows::keys);
}

} // namespace pillars::cuda
