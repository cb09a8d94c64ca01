// A human-readable listing of a graph, one node per line:
//   %12:f32[8, 512] = matmul(%3, %7) trans_b
// `from` starts the listing at a node index (e.g. where autodiff began appending).
#pragma once
#include <ostream>
#include <string>

#include "engine/graph.h"

namespace pillars {

void print_graph(const Graph& g, std::ostream& os, int from = 0);
std::string graph_to_string(const Graph& g, int from = 0);

} // namespace pillars
