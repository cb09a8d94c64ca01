// See flops.h.
#include "engine/passes/flops.h"

#include "engine/op.h"

namespace pillars {

FlopCount count_flops(const Graph& g) {
  FlopCount c;
  for (const Node& n : g.nodes()) {
    if (is_leaf(n) || n.op->is_view || n.op == &kConstantOp) continue;
    const std::string& name = n.op->name;
    double flops = 0;
    if (name == "matmul") {
      // C (..., M, N) = op(A) (..., M, K) · op(B) (K, N): 2·K FLOPs per element of C.
      const Shape a = g.shape(n.inputs[0]);
      const int64_t K = n.attrs.trans_a ? a[a.size() - 2] : a.back();
      flops = 2.0 * static_cast<double>(K) * static_cast<double>(numel(g.shape(n.outputs[0])));
      c.matmul += flops;
    } else if (name == "linear_act") {
      // y (..., out) = act(x (..., in) · Wᵀ + b): the product's 2·in per element under "matmul",
      // and the bias add and the activation it replaces (one each per element) under "other", so a
      // graph counts the same before and after fuse_linear_activation.
      const double elements = static_cast<double>(numel(g.shape(n.outputs[0])));
      const double product = 2.0 * static_cast<double>(g.shape(n.inputs[1])[1]) * elements;
      c.matmul += product;
      c.other += 2.0 * elements;
      flops = product + 2.0 * elements;
    } else if (name == "attention" || name == "attention_backward") {
      // q (B, Tq, H, D), k (B, Tk, H, D): S = Q·Kᵀ and O = P·V, 2·Tq·Tk·D each per (b, h). The
      // backward recomputes S and forms dV, dP, dQ, dK: five products.
      const Shape q = g.shape(n.inputs[0]), k = g.shape(n.inputs[1]);
      double pairs = static_cast<double>(q[0]) * static_cast<double>(q[2]) * static_cast<double>(q[1]) *
                     static_cast<double>(k[1]) * static_cast<double>(q[3]);
      if (n.attrs.causal) pairs /= 2;
      flops = (name == "attention" ? 4.0 : 10.0) * pairs;
      c.attention += flops;
    } else {
      for (ValueId out : n.outputs) flops += static_cast<double>(numel(g.shape(out)));
      c.other += flops;
    }
    c.by_op[name] += flops;
  }
  return c;
}

} // namespace pillars
