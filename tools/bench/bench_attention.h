// `pillars bench attention`: the fused CPU attention (kernels/cpu/attention.cpp) against the naive
// materialized one (kernels/cpu/attention_reference.cpp) on B8 H8 T512 D64, without and with the
// causal mask: forward and forward+backward times, GFLOP/s, speed-up, and each one's peak extra
// memory (fused: its per-thread scratch; naive: the (B, H, T, T) matrices).
#pragma once

namespace pillars::bench {

// Times each case `repeats` times (after one warm-up) with `threads` OpenMP threads and prints the
// medians. Returns 0.
int bench_attention(int threads, int repeats);

} // namespace pillars::bench
