// See memory_estimate.h.
#include "train/memory_estimate.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "engine/passes/fuse_linear_cross_entropy.h"

namespace pillars::train {

namespace {

// One attention module: Q, K, V and the output projection, each (d, d) with a bias.
int64_t attention_parameters(int64_t d) { return 4 * (d * d + d); }
// The feed-forward block: (d → ffn) and (ffn → d), with biases.
int64_t ffn_parameters(int64_t d, int64_t ffn) { return 2 * d * ffn + ffn + d; }

int64_t count_parameters(const TransformerConfig& c) {
  const int64_t d = c.d_model, ln = 2 * d;
  int64_t p = 0;
  // Token tables: the encoder's, the decoder's input, and the output projection unless tied.
  const int64_t tables = c.decoder_only ? 1 + !c.share_decoder_input_output_embed
                                        : (c.share_all_embeddings ? 1 : 2) + !c.share_decoder_input_output_embed;
  p += tables * c.vocab * d;
  p += c.enc_layers * (attention_parameters(d) + ffn_parameters(d, c.ffn) + 2 * ln);
  const int64_t cross = c.decoder_only ? 0 : 1;
  p += c.dec_layers * ((1 + cross) * attention_parameters(d) + ffn_parameters(d, c.ffn) + (2 + cross) * ln);
  p += 2 * ln; // final layer norms (pre-norm)
  return p;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

} // namespace

MemoryEstimate estimate_memory(const Experiment& e, const TransformerConfig& c) {
  MemoryEstimate m;
  m.parameters = count_parameters(c);
  m.model_bytes = 4.0 * 4.0 * static_cast<double>(m.parameters); // weights, gradients, Adam's two moments
  const bool lm = c.decoder_only;
  const double tokens = static_cast<double>(e.data.max_tokens);
  const double layers = static_cast<double>(c.enc_layers + c.dec_layers);
  const double longest =
      static_cast<double>(lm ? e.data.block_size : std::max(e.data.max_source_len, e.data.max_target_len));
  // The logits and their gradient; with the head fused with its loss a training step keeps
  // neither, but an evaluation step still makes the logits.
  const double head = (e.train.fuse_linear_cross_entropy ? 1.0 : 2.0) * static_cast<double>(c.vocab);
  const double per_token = layers * (6.0 * static_cast<double>(c.d_model) + 2.0 * static_cast<double>(c.ffn)) + head;
  double step = tokens * per_token;
  if (e.train.fuse_linear_cross_entropy) // the fused head's scratch: one block of logits
    step += std::min(tokens * static_cast<double>(c.vocab), static_cast<double>(kLinearCrossEntropyBlockBytes) / 4.0);
  const bool probabilities =
      e.train.attention_backend == AttentionBackend::naive ||
      (e.heads.feature_map == ght::FeatureMap::A &&
       (e.heads.regularizer != ght::Regularizer::none || e.prune.method == ght::PruneMethod::v2s));
  if (probabilities) {
    const double modules = static_cast<double>(c.enc_layers + c.dec_layers * (lm ? 1 : 2));
    step += 2.0 * tokens * static_cast<double>(c.heads) * longest * modules; // P and its gradient
  }
  m.step_bytes = 4.0 * step;
  return m;
}

double available_memory_bytes() {
  double available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream in(line);
    std::string key;
    double kib = 0;
    if (in >> key >> kib && key == "MemAvailable:") available = kib * 1024.0;
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const double cap = static_cast<double>(limit.rlim_cur);
    available = available > 0 ? std::min(available, cap) : cap;
  }
  return available;
}

void check_memory(const Experiment& e, const TransformerConfig& cfg, const std::string& origin) {
  if (e.train.device != Device::cpu) return;
  const double available = available_memory_bytes();
  if (available <= 0) return;
  const MemoryEstimate m = estimate_memory(e, cfg);
  if (m.total() <= available) return;
  throw InputError(
      str_cat(origin, ": \"model\" and \"data.max_tokens\": the run needs about ", gib(m.total()), " (the model, ",
              m.parameters, " parameters with gradients and optimizer state: ", gib(m.model_bytes),
              "; one training step of ", e.data.max_tokens, " tokens: ", gib(m.step_bytes), "), but this machine has ",
              gib(available), " available. Reduce model.d_model, model.ffn, the layers or data.max_tokens"));
}

} // namespace pillars::train
