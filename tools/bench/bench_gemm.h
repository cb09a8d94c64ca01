// `pillars bench gemm [--precision bf16]`: GFLOP/s of pillars::cpu::sgemm against OpenBLAS, or of
// pillars::cpu::gemm_bf16 next to our sgemm and oneDNN, on the shapes that matter.
#pragma once

namespace pillars::bench {

// Times each shape `repeats` times (after one warm-up) with `threads` OpenMP threads, and the
// same products with OpenBLAS (loaded at run time, if installed) on `threads` threads; prints the
// medians and their ratio. Returns 0.
int bench_gemm(int threads, int repeats);

// The same shapes with bf16 operands: our gemm_bf16 (the path cpu_features selects), our sgemm on
// the same values as fp32, and oneDNN's dnnl_gemm_bf16bf16f32 (loaded at run time, if installed).
// Prints the CPU model, the medians and the ratios. Returns 0.
int bench_gemm_bf16(int threads, int repeats);

} // namespace pillars::bench
