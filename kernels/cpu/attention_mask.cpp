// See attention_mask.h.
#include "kernels/cpu/attention_mask.h"

namespace pillars::cpu {

void attention_mask(const int32_t* key_lengths, int32_t* m, int64_t B, int64_t Tq, int64_t Tk, bool causal) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) {
        const bool padding = key_lengths && j >= key_lengths[b];
        const bool future = causal && j > i + Tk - Tq;
        m[(b * Tq + i) * Tk + j] = padding || future;
      }
}

} // namespace pillars::cpu
