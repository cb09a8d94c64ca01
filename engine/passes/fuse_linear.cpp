// The linear + activation fusion pass; see fuse_linear.h.
//
// Two sweeps: the first counts each value's readers and marks the chains to fuse (keyed by the
// activation node, whose position in the order is where every input of the chain already exists);
// the second (rewrite_graph, copy_node.h) copies the graph node by node, dropping the chains'
// matmul and add and emitting linear_act in place of the activation.
#include "engine/passes/fuse_linear.h"

#include <map>

#include "base/error.h"
#include "engine/op.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/linear_act.h"
#include "engine/ops/matmul.h"
#include "engine/passes/copy_node.h"

namespace pillars {

namespace {

struct Chain {
  ValueId x, w, b;
  ops::Activation act;
  int matmul_node, add_node;
};

// If node `i` is the activation of a fusable linear → activation chain, returns it.
bool match(const Graph& g, int i, const ValueUses& uses, Chain& c) {
  const Node& act = g.node(i);
  if (act.op != &ops::kRelu && act.op != &ops::kGelu) return false;
  const ValueId z = act.inputs[0];
  if (!uses.single_use(z)) return false;
  const int add_node = g.value(z).producer;
  const Node& add = g.node(add_node);
  if (add.op != &ops::kAdd) return false;
  // add(m, b) as ops::linear emits it; add(b, m) is the same sum.
  for (int side = 0; side < 2; ++side) {
    const ValueId m = add.inputs[static_cast<size_t>(side)], b = add.inputs[static_cast<size_t>(1 - side)];
    if (!uses.single_use(m)) continue;
    const int mm_node = g.value(m).producer;
    const Node& mm = g.node(mm_node);
    if (mm.op != &ops::kMatmul) continue;
    const ops::MatmulParams& mp = params_of<ops::MatmulParams>(mm);
    if (mp.trans_a || !mp.trans_b || mp.alpha != 1.0f) continue;
    const ValueId x = mm.inputs[0], w = mm.inputs[1];
    const Shape ws = g.shape(w);
    if (ws.size() != 2 || g.shape(x).size() < 2 || g.shape(b) != Shape{ws[0]} || g.dtype(b) != DType::f32) continue;
    c = {x, w, b, act.op == &ops::kGelu ? ops::Activation::gelu : ops::Activation::relu, mm_node, add_node};
    return true;
  }
  return false;
}

} // namespace

RewrittenGraph fuse_linear_activation(const Graph& g) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  const ValueUses uses = value_uses(g);

  std::map<int, Chain> chains; // activation node → chain
  std::vector<bool> dropped(static_cast<size_t>(num_nodes), false);
  for (int i = 0; i < num_nodes; ++i) {
    Chain c;
    if (!match(g, i, uses, c)) continue;
    chains.emplace(i, c);
    dropped[static_cast<size_t>(c.matmul_node)] = dropped[static_cast<size_t>(c.add_node)] = true;
  }

  return rewrite_graph(
      g, dropped,
      [&](int i, Graph& out, const std::function<ValueId(ValueId)>& map) -> std::optional<std::vector<ValueId>> {
        const auto it = chains.find(i);
        if (it == chains.end()) return std::nullopt;
        const Chain& c = it->second;
        return std::vector<ValueId>{ops::linear_act(out, map(c.x), map(c.w), map(c.b), c.act).y}; // pre is new
      },
      "fuse_linear_activation");
}

} // namespace pillars
