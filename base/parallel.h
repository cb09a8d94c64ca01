// When a CPU loop is worth spreading over OpenMP threads.
//
//   #pragma omp parallel for schedule(static) if (n >= kParallelGrain)
//
// Starting a parallel region costs a few microseconds (waking the team, the barrier at its end);
// a simple loop over 32k floats takes about as long on one core. Below that size one thread is
// faster, above it the work dwarfs the start-up. One number for every elementwise, row and copy
// loop of the CPU kernels and ops; a loop that does much more (or less) work per element scales it
// (e.g. kParallelGrain / 8 for the erf of GELU).
#pragma once
#include <cstdint>

namespace pillars {

inline constexpr int64_t kParallelGrain = int64_t{1} << 15; // elements

} // namespace pillars
