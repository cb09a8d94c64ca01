// The head_gates pass: multiplies each head's output by a gate in front of its module's out_proj.
//
// For every attention module m (an AttentionSite) whose gating parts give gates, with O (B, Tq, H,
// Dh) the heads' outputs A_h·V_h:
//
//   ξ     = Π_parts head_gate(m)           (H)            DropHead masks, Hard-Concrete gates,
//                                                         Michel et al.'s importance gates
//   out_proj reads   ξ_h · O_h             (B, Tq, H, Dh)  instead of O_h
//
// The pass copies the graph node by node (engine/passes/copy_node.h; it runs right after the two
// fusions, before any pass records value numbers): right after the node that makes O, it appends the parts' gate nodes
// and the product, and every later reader of O reads the gated value instead. The site's `out`
// stays the ungated O (the GHT feature map) and its `gate` becomes ξ.
#pragma once
#include <vector>

#include "steps/extension.h"
#include "steps/pass.h"

namespace pillars::train {

// `parts`: the extension parts with gates_heads(), in order (their gates multiply in that order).
void gate_heads(StepGraph& s, const std::vector<GraphExtension*>& parts);

} // namespace pillars::train
