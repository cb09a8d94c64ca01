// See attention_mask.h.
#include "kernels/cpu/attention_mask.h"

namespace pillars::cpu {

void attention_mask(const AttentionMaskArgs& a, const int32_t* key_lengths, int32_t* m) {
  const int64_t B = a.B, Tq = a.Tq, Tk = a.Tk;
  const bool causal = a.causal;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) {
        const bool padding = key_lengths && j >= key_lengths[b];
        const bool future = causal && j > i + Tk - Tq;
        m[(b * Tq + i) * Tk + j] = padding || future;
      }
}

} // namespace pillars::cpu
