// See flops.h.
#include "engine/passes/flops.h"

#include "engine/op.h"

namespace pillars {

FlopCount count_flops(const Graph& g) {
  FlopCount c;
  for (const Node& n : g.nodes()) {
    if (is_leaf(n) || n.op->is_view) continue;
    NodeFlops f;
    if (n.op->flops) {
      f = n.op->flops(g, n);
    } else {
      for (ValueId out : n.outputs) f.other += static_cast<double>(numel(g.shape(out)));
    }
    c.matmul += f.matmul;
    c.attention += f.attention;
    c.other += f.other;
    c.by_op[n.op->name] += f.total();
  }
  return c;
}

} // namespace pillars
