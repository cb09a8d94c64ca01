// Embedding gather and its gradient (scatter-add), on the CPU.
//
//   forward   out[i, :] = table[ids[i], :]                  table (V, D), ids (n), out (n, D)
//   backward  dtable[v, :] = Σ_{i : ids[i] = v} dout[i, :]   (rows never looked up stay 0)
//
// The scatter-add is deterministic: each column block of dtable is owned by one thread, which
// adds the dout rows in position order, so repeated ids accumulate in the same order on every run
// and with any thread count (no atomics, no races).
#pragma once
#include <cstdint>

#include "kernels/args/embedding.h"

namespace pillars::cpu {

using kernels::EmbeddingArgs; // kernels/args/embedding.h, shared with the other device

// Throws pillars::Error naming the first id outside [0, V), its position and V. ids: (n).
void embedding_check_ids(const EmbeddingArgs& a, const int32_t* ids);
// table (V, D), ids (n) → out (n, D).
void embedding_forward(const EmbeddingArgs& a, const float* table, const int32_t* ids, float* out);
// dout (n, D), ids (n) → dtable (V, D), overwritten.
void embedding_backward(const EmbeddingArgs& a, const float* dout, const int32_t* ids, float* dtable);

} // namespace pillars::cpu
