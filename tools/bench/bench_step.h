// `pillars bench step`: one training step of the reference encoder-decoder (3+3 layers, d_model
// 256, 8 heads, FFN 1024, vocab 10k, ~4,000 target tokens, Adam) — ours vs PyTorch 1.13 on the
// same thread count: target tokens/s and peak RSS.
#pragma once

namespace pillars::bench {

int bench_step(int threads, int repeats);

} // namespace pillars::bench
