// See loops.h.
#include "engine/optim/loops.h"

#include "base/error.h"

#ifdef PILLARS_HAVE_CUDA
#include "kernels/cuda/adam.h"
#define PILLARS_ON_DEVICE(d, cpu_call, cuda_call) ((d) == Device::cpu ? (cpu_call) : (cuda_call))
#else
#define PILLARS_ON_DEVICE(d, cpu_call, cuda_call) \
  ((d) == Device::cpu ? (cpu_call) : throw Error("optimizer: a CUDA tensor in a build without CUDA"))
#endif

namespace pillars::optim {

void adam_update(Device d, int64_t n, float* p, const float* g, float* m, float* v, float* v_max, const cpu::AdamCoeffs& c) {
  PILLARS_ON_DEVICE(d, cpu::adam_update(n, p, g, m, v, v_max, c), cuda::adam_update(n, p, g, m, v, v_max, c));
}

void sgd_update(Device d, int64_t n, float* p, const float* g, float* buf, const cpu::SgdCoeffs& c) {
  PILLARS_ON_DEVICE(d, cpu::sgd_update(n, p, g, buf, c), cuda::sgd_update(n, p, g, buf, c));
}

double sum_of_squares(Device d, int64_t n, const float* x) {
  return PILLARS_ON_DEVICE(d, cpu::sum_of_squares(n, x), cuda::sum_of_squares(n, x));
}

void scale(Device d, int64_t n, float* x, float s) { PILLARS_ON_DEVICE(d, cpu::scale(n, x, s), cuda::scale(n, x, s)); }

void accumulate_weighted(Device d, int64_t n, float* acc, const float* g, float w, bool first) {
  PILLARS_ON_DEVICE(d, cpu::accumulate_weighted(n, acc, g, w, first), cuda::accumulate_weighted(n, acc, g, w, first));
}

void divide(Device d, int64_t n, float* x, float s) { PILLARS_ON_DEVICE(d, cpu::divide(n, x, s), cuda::divide(n, x, s)); }

} // namespace pillars::optim
