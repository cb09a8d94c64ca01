// GPU benchmarks (`pillars bench attention|softmax --device cuda`); see bench_cuda.cpp.
#pragma once

namespace pillars::bench {

int bench_cuda_attention(int repeats);
int bench_cuda_softmax(int repeats);
int bench_cuda_step(int repeats);

} // namespace pillars::bench
