// The LM head + cross-entropy fusion pass; see fuse_linear_cross_entropy.h.
//
// Two sweeps, as fuse_linear_activation: the first counts readers and finds the pairs (keyed by
// the cross_entropy node, where h, W and t all exist already); the second (rewrite_graph,
// copy_node.h) copies the graph, dropping each pair's matmul and emitting linear_cross_entropy in
// place of its cross_entropy.
#include "engine/passes/fuse_linear_cross_entropy.h"

#include <algorithm>
#include <map>

#include "engine/op.h"
#include "engine/ops/linear_cross_entropy.h"
#include "engine/ops/matmul.h"
#include "engine/ops/cross_entropy.h"

namespace pillars {

namespace {

struct Pair {
  ValueId h, W, t;
  int matmul_node;
};

bool match(const Graph& g, int i, const ValueUses& uses, Pair& p) {
  const Node& ce = g.node(i);
  if (ce.op != &ops::kCrossEntropy) return false;
  const ValueId x = ce.inputs[0], lse = ce.outputs[1];
  if (!uses.single_use(x) || !uses.unused(lse)) return false;
  const int mm_node = g.value(x).producer;
  const Node& mm = g.node(mm_node);
  if (mm.op != &ops::kMatmul) return false;
  const ops::MatmulParams& mp = params_of<ops::MatmulParams>(mm);
  if (mp.trans_a || !mp.trans_b || mp.alpha != 1.0f) return false;
  const ValueId h = mm.inputs[0], W = mm.inputs[1];
  if (g.shape(h).size() != 2 || g.shape(W).size() != 2 || g.shape(ce.inputs[1]).size() != 1) return false;
  if (g.dtype(h) != DType::f32 || g.dtype(W) != DType::f32 || g.shape(h)[1] == 0) return false;
  p = {h, W, ce.inputs[1], mm_node};
  return true;
}

} // namespace

RewrittenGraph fuse_linear_cross_entropy(const Graph& g, int64_t block_bytes) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  const ValueUses uses = value_uses(g);

  std::map<int, Pair> pairs; // cross_entropy node → its head
  std::vector<bool> dropped(static_cast<size_t>(num_nodes), false);
  for (int i = 0; i < num_nodes; ++i) {
    Pair p;
    if (!match(g, i, uses, p)) continue;
    pairs.emplace(i, p);
    dropped[static_cast<size_t>(p.matmul_node)] = true;
  }

  return rewrite_graph(
      g, dropped,
      [&](int i, Graph& out, const std::function<ValueId(ValueId)>& map) -> std::optional<std::vector<ValueId>> {
        const auto it = pairs.find(i);
        if (it == pairs.end()) return std::nullopt;
        const Pair& p = it->second;
        const ops::CrossEntropyParams& ce = params_of<ops::CrossEntropyParams>(g.node(i));
        const int64_t N = g.shape(p.h)[0], V = g.shape(p.W)[0];
        const int64_t block_rows =
            std::clamp<int64_t>(block_bytes / (V * static_cast<int64_t>(sizeof(float))), 1, std::max<int64_t>(N, 1));
        const ops::LinearCrossEntropy f =
            ops::linear_cross_entropy(out, map(p.h), map(p.W), map(p.t), ce.smoothing, ce.ignore_index, block_rows);
        return std::vector<ValueId>{f.loss, kNoValue}; // lse is gone
      },
      "fuse_linear_cross_entropy");
}

} // namespace pillars
