// `pillars bench step`: one training step of the reference encoder-decoder (3+3 layers, d_model
// 256, 8 heads, FFN 1024, vocab 10k, ~4,000 target tokens, Adam) — ours vs PyTorch 1.13 on the
// same thread count: target tokens/s and peak RSS.
#pragma once

namespace pillars::bench {

int bench_step(int threads, int repeats);

// `pillars bench step --precision bf16`: the same step with the CPU's matmul precision fp32, then
// bf16 (kernels/cpu/gemm_precision.h: the matmul products on operands rounded to bf16), in one
// run: target tokens/s of each, with the CPU model and the bf16 GEMM's path.
int bench_step_bf16(int threads, int repeats);

} // namespace pillars::bench
