// `pillars bench decode`: beam-5 decoding through the executor (decode/step_decoder.h) on the CPU,
// with and without compaction, and GHT-PS against the unpruned model, in one run.
//
// Models: `small` (3+3, d 256, 4 heads), `base` (6+6, d 512, 8 heads) and GHT-PS (base with 2 of 8
// heads kept in all 18 modules, ght/prune.h), randomly initialized (seed 1), vocabulary 10000.
// Two workloads per model:
//   real    the first 128 sentences of Multi30k's test_2016_flickr German side (tokenized; words
//           hashed to ids), batches of 64 (eval.batch_sentences' default) sorted by length, max
//           length 1.2 · source + 10: the sentences' searches end at different steps, which is
//           what compaction exploits (an untrained model rarely ends early, so only the length
//           limits differ: a trained model's earlier eos gives compaction more to drop);
//   forced  48 random sources of 20-30 tokens, every hypothesis forced to 28 tokens
//           (min_len = max_len): all sentences end together, so compaction cannot help.
// Columns: the decoder without compaction (finished sentences stay in the batch) and with it;
// sentences/s and generated target tokens/s (the best hypotheses' lengths, eos included), their
// ratio, and how many sentences' best hypotheses are token-identical between the two (all should
// be: compaction only drops finished rows). Target (CPU): GHT-PS ≥ 1.15× base.
// Last, the per-sentence test loss that `pillars eval` computes for the paired bootstrap
// (train::sentence_nll, teacher-forced through the same step decoder), small model, all 1,000
// test_2016_flickr pairs (both sides' words hashed), batches of 64: in the split's order against
// shortest target first, sentences/s, and how many losses are bit-identical (all should be).
// (The hand-written decoder the executor's replaced was compared here until its figures were
// recorded: docs/PERFORMANCE.md, "Decoding through the executor".)
#pragma once

namespace pillars::bench {

int bench_decode(int threads, int repeats);

// `pillars bench decode --precision bf16`: beam-5 decoding (compaction on) of the small and base
// models, the same workloads, at the decoder's precision fp32 and then bf16 (decode/step_decoder.h:
// matmuls and attention products on bf16 operands, each weight matrix packed once), in one run;
// generated tokens/s, their ratio, and how many best hypotheses are token-identical (random weights:
// near-ties, so bf16's rounding changes some). Prints the CPU model, the ISA and the bf16 GEMM path.
int bench_decode_bf16(int threads, int repeats);

} // namespace pillars::bench
