// plan_memory: assigns every computed value a byte offset in one arena, reusing the memory of
// values that are dead (liveness analysis + best-fit). Leaves (inputs, parameters, constants)
// live outside the arena; views (reshape) and in-place state updates (OpDef::updates_input0)
// share their source's bytes; an op marked `inplace`
// writes its output over its first input when that input dies at the op.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace pillars {

struct MemoryPlan {
  static constexpr int64_t kExternal = -1;
  std::vector<int64_t> offset;    // per value: arena byte offset, or kExternal
  std::vector<int32_t> alias_of;  // per value: the value whose bytes it shares (itself if none)
  std::vector<int32_t> took_over; // per value: the dead input whose buffer it was written into in place, or -1
  size_t arena_bytes = 0;         // arena size (= peak live bytes with reuse, plus fragmentation)
  size_t naive_bytes = 0;         // what one buffer per value would take
  size_t workspace_bytes = 0;     // largest per-node scratch (one buffer, nodes run one at a time)
};

// `device` picks whose scratch sizes count (OpDef::workspace or OpDef::cuda_workspace).
MemoryPlan plan_memory(const Graph& g, Device device = Device::cpu);

} // namespace pillars
