// `pillars bench gct` and `pillars bench pruned-decode`: what the GHT method costs and saves.
//
//   gct            one training step (forward, backward) of the reference model ("bench": 3+3,
//                  d 256, 8 heads) with the GCT pass (HUDS K-means + Eq. 4B in every one of the 9
//                  modules, for each feature map V, O, A) against the same step without it.
//                  Target: ≤ 1.10× the vanilla step.
//   pruned-decode  beam-5 decoding with the `base` model (6+6, d 512, 8 heads) against GHT-PS, the
//                  same model with 2 of 8 heads kept in all 18 modules (ght/prune.h), same
//                  sentences and output lengths. Target: ≥ 1.15× the unpruned model's sentences/s.
#pragma once

namespace pillars::bench {

int bench_gct(int threads, int repeats);
int bench_pruned_decode(int threads, int repeats);

} // namespace pillars::bench
