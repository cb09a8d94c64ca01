// embedding (gather) and embedding_backward (deterministic scatter-add).
//
//   table (V, D) f32, ids (...) i32  →  out (..., D),   out[i, :] = table[ids[i], :]
//   d table[v, :] = Σ_{i : ids[i] = v} d out[i, :]        → op embedding_backward(dout, ids)
// Ids receive no gradient. An id outside [0, V) is reported by the kernel (kernels/cpu/embedding.h)
// with the id, its position and V.
#include "engine/ops/common.h"
#include "engine/ops/embedding.h"
#include "kernels/cpu/embedding.h"

namespace pillars::ops {
namespace {

void check_ids(const Graph& g, const char* op, ValueId ids) {
  PILLARS_CHECK(g.dtype(ids) == DType::i32, op, ": ids must be i32, got ", dtype_name(g.dtype(ids)));
}

// inputs: table (V, D), ids (...)
std::vector<OutputSpec> infer_forward(const Graph& g, const Node& n) {
  const Shape& ts = g.shape(n.inputs[0]);
  PILLARS_CHECK(ts.size() == 2 && g.dtype(n.inputs[0]) == DType::f32, "embedding: table must be f32 (V, D), got ",
                dtype_name(g.dtype(n.inputs[0])), shape_str(ts));
  check_ids(g, "embedding", n.inputs[1]);
  Shape out = g.shape(n.inputs[1]);
  out.push_back(ts[1]);
  return {{out, DType::f32}};
}

void cpu_forward(const KernelContext& c) {
  const Tensor &table = c.in[0], &ids = c.in[1];
  cpu::embedding_forward({.n = ids.numel(), .V = table.dim(0), .D = table.dim(1)}, table.data<float>(),
                         ids.data<int32_t>(), c.out[0].data<float>());
}

// inputs: dout (..., D), ids (...); EmbeddingBackwardParams {V} → (V, D)
std::vector<OutputSpec> infer_backward(const Graph& g, const Node& n) {
  const Shape& ds = g.shape(n.inputs[0]);
  check_ids(g, "embedding_backward", n.inputs[1]);
  PILLARS_CHECK(!ds.empty() && Shape(ds.begin(), ds.end() - 1) == g.shape(n.inputs[1]), "embedding_backward: dout ",
                shape_str(ds), " does not match ids ", shape_str(g.shape(n.inputs[1])));
  return {{{params_of<EmbeddingBackwardParams>(n).vocab, ds.back()}, DType::f32}};
}

void cpu_backward(const KernelContext& c) {
  const Tensor &dout = c.in[0], &ids = c.in[1], &dtable = c.out[0];
  cpu::embedding_backward({.n = ids.numel(), .V = dtable.dim(0), .D = dtable.dim(1)}, dout.data<float>(),
                          ids.data<int32_t>(), dtable.data<float>());
}

std::string print_backward(const Node& n) { return str_cat(" vocab=", params_of<EmbeddingBackwardParams>(n).vocab); }

const OpDef kEmbeddingBackward{.name = "embedding_backward",
                               .infer = infer_backward,
                               .cpu = cpu_backward,
                               .cuda = PILLARS_CUDA_KERNEL(embedding_backward),
                               .print = print_backward};

std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue, kNoValue};
  return {g.add1(kEmbeddingBackward, {dy[0], n.inputs[1]}, EmbeddingBackwardParams{.vocab = g.shape(n.inputs[0])[0]}),
          kNoValue};
}

const OpDef kEmbedding{.name = "embedding",
                       .infer = infer_forward,
                       .cpu = cpu_forward,
                       .cuda = PILLARS_CUDA_KERNEL(embedding),
                       .vjp = vjp};

} // namespace

ValueId embedding(Graph& g, ValueId table, ValueId ids) { return g.add1(kEmbedding, {table, ids}); }

} // namespace pillars::ops
