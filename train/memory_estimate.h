// How much memory a run will need, estimated from its settings before anything is allocated, and
// the check that refuses a run this machine cannot hold (exit 2, naming the fields to change).
//
//   MemoryEstimate m = estimate_memory(e, cfg);   // cfg: model_config(e, vocab)
//   check_memory(e, cfg, "experiments/x.json");   // InputError when m.total() > what is available
//
// The estimate, in fp32 bytes (bf16 runs need less):
//   model       4·P: the parameters, their gradients and Adam's two moments, P counted from the
//               config (token tables, attention and FFN weights and biases, layer norms);
//   one step    what the backward keeps of the forward, for the at most data.max_tokens tokens a
//               batch holds on each side (B·T ≤ max_tokens, padding included; steps/batching.h):
//                 per token and layer  6·d + 2·ffn   (sub-layer inputs and outputs, Q K V, the
//                                                     FFN's hidden layer before and after its
//                                                     activation)
//                 per token            2·V           (the logits and their gradient; V with
//                                                     train.fuse_linear_cross_entropy, which
//                                                     leaves only the evaluation step's logits,
//                                                     plus its scratch: one block of logits)
//               plus, where the attention probabilities are materialized (the naive backend, or a
//               head method on the A feature map), 2·H·T per token and attention module (P and its
//               gradient), with T the longest sequence.
// Calibration: for `make run` (the small model, V ≈ 10k, 4,096 tokens) it says 0.68 GB for the
// step and 0.16 GB for the model; the measured peak RSS of the whole run is 0.77 GB. It leaves
// out what does not grow with the settings (the binary, the datasets' text) and counts no reuse
// of buffers, so it is a rough upper bound of the training's own memory; it is compared with the
// available memory as it is, which refuses only runs that are off by a wide margin. The bounds of
// train/limits.h catch what is absurd on any machine.
#pragma once
#include <cstdint>
#include <string>

#include "models/transformer.h"
#include "train/experiment.h"

namespace pillars::train {

struct MemoryEstimate {
  int64_t parameters = 0; // P, the number of parameters
  double model_bytes = 0; // parameters + gradients + optimizer state
  double step_bytes = 0;  // activations of one training step
  double total() const { return model_bytes + step_bytes; }
};

MemoryEstimate estimate_memory(const Experiment& e, const TransformerConfig& cfg);

// Bytes of memory this process can still use: MemAvailable from /proc/meminfo, capped by an
// address-space limit (ulimit -v) when one is set; 0 when neither can be read (then no check).
double available_memory_bytes();

// Throws InputError starting with `origin` when a CPU run's estimate exceeds the available
// memory. (A cuda run's memory is the GPU's; it is not checked here.)
void check_memory(const Experiment& e, const TransformerConfig& cfg, const std::string& origin);

} // namespace pillars::train
