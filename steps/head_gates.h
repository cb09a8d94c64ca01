// The head_gates pass: multiplies each head's output by a gate in front of its module's out_proj.
//
// For every attention module m (an AttentionSite), with O (B, Tq, H, Dh) the heads' outputs A_h·V_h
// and the gate functions of the run's methods (DropHead's mask input, the Hard-Concrete gate,
// Michel et al.'s importance gate; train/pass_list.cpp chooses them):
//
//   ξ     = Π_f f(m)                       (H)
//   out_proj reads   ξ_h · O_h             (B, Tq, H, Dh)  instead of O_h
//
// The pass copies the graph node by node (engine/passes/copy_node.h): right after the node that
// makes O, it appends the gate nodes and the product, and every later reader of O reads the gated
// value instead. The site's `out` stays the ungated O (the GHT feature map), its `gate` becomes ξ,
// and ξ is named "head_gate.<module>.xi" for readers.
#pragma once
#include <functional>
#include <vector>

#include "steps/pass.h"

namespace pillars::steps {

// ξ (H) of module `module_index` (graph order), appended to s.graph (a gate may declare run-time
// inputs on s); kNoValue when this function does not gate the module.
using HeadGate = std::function<ValueId(StepGraph& s, const AttentionSite& site, size_t module_index)>;

// `gates` multiply in this order.
void gate_heads(StepGraph& s, const std::vector<HeadGate>& gates);

} // namespace pillars::steps
