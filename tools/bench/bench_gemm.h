// `pillars bench gemm`: GFLOP/s of pillars::cpu::sgemm against OpenBLAS on the shapes that matter.
#pragma once

namespace pillars::bench {

// Times each shape `repeats` times (after one warm-up) with `threads` OpenMP threads, and the
// same products with OpenBLAS (loaded at run time, if installed) on `threads` threads; prints the
// medians and their ratio. Returns 0.
int bench_gemm(int threads, int repeats);

} // namespace pillars::bench
