// Copying a node into another graph: what a rewriting pass does with every node it keeps
// (engine/passes/fuse_linear.h, the head-gates pass of steps/). A graph cannot drop nodes, so a pass
// that changes a graph builds a new one node by node.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "engine/graph.h"

namespace pillars {

// Appends to `to` a copy of node `n` of `from` and returns its outputs. Leaves keep their name
// (inputs and parameters bind as before) and constants their value; other nodes keep their op and
// parameters and read `inputs`, values of `to`.
std::vector<ValueId> copy_node(const Graph& from, const Node& n, Graph& to, std::vector<ValueId> inputs);

// How a fusing pass sees each value of g: the nodes reading it, and whether it is a graph output.
struct ValueUses {
  std::vector<int> readers;    // per value: how many node inputs read it
  std::vector<bool> is_output; // per value: marked as a graph output

  // Read by exactly one node and not an output: a fusion may swallow it.
  bool single_use(ValueId v) const {
    return readers[static_cast<size_t>(v)] == 1 && !is_output[static_cast<size_t>(v)];
  }
  // Read by no node and not an output: a fused node need not produce it.
  bool unused(ValueId v) const { return readers[static_cast<size_t>(v)] == 0 && !is_output[static_cast<size_t>(v)]; }
};
ValueUses value_uses(const Graph& g);

// A graph rebuilt by a fusing pass (engine/passes/fuse_linear.h, fuse_linear_cross_entropy.h), and
// where every old value and node went, so a caller can find its values again
// (StepGraph::replace_graph, steps/pass.h).
struct RewrittenGraph {
  Graph graph;
  std::vector<ValueId> value_map; // old value → new value (kNoValue: gone with a fused node)
  std::vector<int> node_map;      // old node index → new index (-1: dropped; a replaced node maps
                                  // to the node that took its place)
  int fused = 0;                  // nodes replaced

  ValueId value(ValueId old) const { return old == kNoValue ? kNoValue : value_map.at(static_cast<size_t>(old)); }
};

// What takes node `i`'s place: it emits nodes into `out` (reading old values through `map`) and
// returns one new value per output of node i (kNoValue for an output nothing may read), or
// returns nothing to have node i copied unchanged.
using NodeReplacement =
    std::function<std::optional<std::vector<ValueId>>(int i, Graph& out, const std::function<ValueId(ValueId)>& map)>;

// Copies g in order into a new graph, leaving out the nodes `dropped` marks and replacing the
// nodes `replace` takes. Marked outputs stay marked. Throws, naming `pass`, if a kept node reads
// a value that is gone.
RewrittenGraph rewrite_graph(const Graph& g, const std::vector<bool>& dropped, const NodeReplacement& replace,
                             const char* pass);

} // namespace pillars
