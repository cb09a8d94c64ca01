// Extents as the kernels take them: a span of int64_t, outermost axis first (what the engine
// calls a Shape converts to one implicitly). dims_count and dims_str compute exactly what
// engine/tensor.h's numel and shape_str do, so kernels count and print shapes the same way
// without depending on the engine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pillars {

// The number of elements (1 for rank 0).
inline int64_t dims_count(std::span<const int64_t> d) {
  int64_t n = 1;
  for (int64_t e : d) n *= e;
  return n;
}

// "[2, 3, 4]"
inline std::string dims_str(std::span<const int64_t> d) {
  std::string out = "[";
  for (size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + std::to_string(d[i]);
  return out + "]";
}

} // namespace pillars
