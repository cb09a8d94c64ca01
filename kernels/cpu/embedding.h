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

namespace pillars::cpu {

// Throws pillars::Error naming the first id outside [0, V), its position and V.
void embedding_check_ids(const int32_t* ids, int64_t n, int64_t V);

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t V, int64_t D);

// dtable (V, D) is overwritten.
void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t V, int64_t D);

} // namespace pillars::cpu
