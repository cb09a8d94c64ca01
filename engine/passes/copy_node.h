// Copying a node into another graph: what a rewriting pass does with every node it keeps
// (engine/passes/fuse_linear.h, the head-gates pass of steps/). A graph cannot drop nodes, so a pass
// that changes a graph builds a new one node by node.
#pragma once
#include <vector>

#include "engine/graph.h"

namespace pillars {

// Appends to `to` a copy of node `n` of `from` and returns its outputs. Leaves keep their name
// (inputs and parameters bind as before) and constants their value; other nodes keep their op and
// parameters and read `inputs`, values of `to`.
std::vector<ValueId> copy_node(const Graph& from, const Node& n, Graph& to, std::vector<ValueId> inputs);

} // namespace pillars
