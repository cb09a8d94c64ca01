// Reverse-mode autodiff as a graph pass; see autodiff.h.
//
// For a scalar loss L and a node y = f(x1, …, xn), the chain rule gives
//     dL/dx_i += vjp_i(dL/dy)
// where vjp_i is the op's vector-Jacobian product. Visiting nodes in reverse topological order
// guarantees dL/dy is complete (all its uses visited) before it is propagated to the inputs.
#include "engine/passes/autodiff.h"

#include "base/error.h"
#include "engine/op.h"
#include "engine/ops/elementwise.h"

namespace pillars {

namespace {

// needs[v]: v depends on some w in `wrt` (forward reachability) — only those need gradients.
std::vector<bool> values_depending_on(const Graph& g, const std::vector<ValueId>& wrt, int num_forward_nodes) {
  std::vector<bool> depends(static_cast<size_t>(g.num_values()), false);
  for (ValueId w : wrt) depends[static_cast<size_t>(w)] = true;
  for (int i = 0; i < num_forward_nodes; ++i) {
    const Node& n = g.node(i);
    bool any = false;
    for (ValueId v : n.inputs) any = any || depends[static_cast<size_t>(v)];
    if (!any) continue;
    for (ValueId v : n.outputs)
      if (g.dtype(v) == DType::f32) depends[static_cast<size_t>(v)] = true;
  }
  return depends;
}

} // namespace

std::vector<ValueId> autodiff(Graph& g, ValueId loss, const std::vector<ValueId>& wrt) {
  PILLARS_CHECK(g.shape(loss).empty() && g.dtype(loss) == DType::f32, "autodiff: the loss must be an f32 scalar, got ",
                dtype_name(g.dtype(loss)), shape_str(g.shape(loss)));
  const int num_forward_nodes = static_cast<int>(g.nodes().size());
  const std::vector<bool> depends = values_depending_on(g, wrt, num_forward_nodes);

  // grad[v] = the value holding dL/dv accumulated so far (kNoValue: none yet).
  std::vector<ValueId> grad(static_cast<size_t>(g.num_values()), kNoValue);
  grad[static_cast<size_t>(loss)] = ops::fill(g, {}, 1.0f);

  for (int i = num_forward_nodes - 1; i >= 0; --i) {
    const Node node = g.node(i); // a copy: vjp appends nodes and may reallocate g's storage
    std::vector<ValueId> grad_out;
    bool any_grad = false;
    for (ValueId v : node.outputs) {
      const ValueId gv = static_cast<size_t>(v) < grad.size() ? grad[static_cast<size_t>(v)] : kNoValue;
      grad_out.push_back(gv);
      any_grad = any_grad || gv != kNoValue;
    }
    if (!any_grad) continue;

    std::vector<bool> needs;
    bool any_need = false;
    for (ValueId v : node.inputs) {
      needs.push_back(depends[static_cast<size_t>(v)]);
      any_need = any_need || needs.back();
    }
    if (!any_need) continue;
    PILLARS_CHECK(node.op->vjp != nullptr, "autodiff: op '", node.op->name, "' has no gradient");

    const std::vector<ValueId> grad_in = node.op->vjp(g, node, grad_out, needs);
    grad.resize(static_cast<size_t>(g.num_values()), kNoValue);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!needs[k] || grad_in[k] == kNoValue) continue;
      const ValueId x = node.inputs[k];
      PILLARS_CHECK(g.shape(grad_in[k]) == g.shape(x), "autodiff: gradient of op '", node.op->name, "' input ", k,
                    " has shape ", shape_str(g.shape(grad_in[k])), ", expected ", shape_str(g.shape(x)));
      ValueId& acc = grad[static_cast<size_t>(x)];
      acc = acc == kNoValue ? grad_in[k] : ops::add(g, acc, grad_in[k]);
      grad.resize(static_cast<size_t>(g.num_values()), kNoValue);
    }
  }

  std::vector<ValueId> result;
  for (ValueId w : wrt) {
    const ValueId gw = grad[static_cast<size_t>(w)];
    if (gw != kNoValue) g.mark_output(gw);
    result.push_back(gw);
  }
  return result;
}

} // namespace pillars
