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

void adam_update(Device d, const cpu::AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max) {
  PILLARS_ON_DEVICE(d, cpu::adam_update(a, p, g, m, v, v_max), cuda::adam_update(a, p, g, m, v, v_max));
}

void sgd_update(Device d, const cpu::SgdArgs& a, float* p, const float* g, float* buf) {
  PILLARS_ON_DEVICE(d, cpu::sgd_update(a, p, g, buf), cuda::sgd_update(a, p, g, buf));
}

double sum_of_squares(Device d, int64_t n, const float* x) {
  return PILLARS_ON_DEVICE(d, cpu::sum_of_squares({.n = n}, x), cuda::sum_of_squares({.n = n}, x));
}

// The parentheses keep the designated initializers' commas inside one macro argument.
void scale(Device d, int64_t n, float* x, float s) {
  PILLARS_ON_DEVICE(d, (cpu::scale({.n = n, .s = s}, x)), (cuda::scale({.n = n, .s = s}, x)));
}

void accumulate_weighted(Device d, int64_t n, float* acc, const float* g, float w, bool first) {
  PILLARS_ON_DEVICE(d, (cpu::accumulate_weighted({.n = n, .w = w, .first = first}, g, acc)),
                    (cuda::accumulate_weighted({.n = n, .w = w, .first = first}, g, acc)));
}

void divide(Device d, int64_t n, float* x, float s) {
  PILLARS_ON_DEVICE(d, (cpu::divide({.n = n, .s = s}, x)), (cuda::divide({.n = n, .s = s}, x)));
}

} // namespace pillars::optim
