// A human-readable listing of a graph, one node per line:
//   %12:f32[8, 512] = matmul(%3, %7) trans_b
// `from` starts the listing at a node index (e.g. where autodiff began appending). With `marked`
// (one flag per node), marked nodes begin with "+ " and the others with two spaces: `pillars graph
// --after PASS` marks the nodes that pass added.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "engine/graph.h"

namespace pillars {

void print_graph(const Graph& g, std::ostream& os, int from = 0, const std::vector<bool>* marked = nullptr);
// One node's line (no mark).
void print_graph_node(const Graph& g, std::ostream& os, int node);
std::string graph_to_string(const Graph& g, int from = 0);

} // namespace pillars
