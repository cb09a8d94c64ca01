// See setup.h.
#include "train/setup.h"

#include "base/error.h"
#include "engine/optim/adam.h"
#include "engine/optim/sgd.h"

namespace pillars::train {

TransformerConfig model_config(const Experiment& e, int64_t vocab) {
  TransformerConfig c = transformer_config(e.model.config);
  const ModelSettings& m = e.model;
  c.vocab = vocab;
  if (m.d_model) c.d_model = *m.d_model;
  if (m.heads) c.heads = *m.heads;
  if (m.ffn) c.ffn = *m.ffn;
  if (m.enc_layers) c.enc_layers = *m.enc_layers;
  if (m.dec_layers) c.dec_layers = *m.dec_layers;
  if (m.layers) c.dec_layers = *m.layers;
  if (m.pre_norm) c.pre_norm = *m.pre_norm;
  if (m.activation) c.activation = *m.activation;
  if (m.dropout) c.dropout = static_cast<float>(*m.dropout);
  if (m.attention_dropout) c.attention_dropout = static_cast<float>(*m.attention_dropout);
  if (m.activation_dropout) c.activation_dropout = static_cast<float>(*m.activation_dropout);
  if (m.share_all_embeddings) c.share_all_embeddings = *m.share_all_embeddings;
  if (m.share_decoder_input_output_embed) c.share_decoder_input_output_embed = *m.share_decoder_input_output_embed;
  const bool lm = e.task == Task::language_modeling;
  if (lm != c.decoder_only)
    throw InputError(str_cat("experiment \"", e.name, "\": \"model.config\": \"", e.model.config, "\" is ",
                             c.decoder_only ? "a decoder-only language model" : "an encoder-decoder",
                             ", but the task is \"", enum_name(e.task), "\" (use ",
                             lm ? "lm-small or lm-wt103" : "small, base, lite1 or lite2", ")"));
  try {
    c.validate();
  } catch (const InputError& err) {
    throw InputError(str_cat("experiment \"", e.name, "\": model: ", err.what()));
  }
  return c;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimSettings& o) {
  switch (o.optimizer) {
    case Optimizer::adam: // fairseq's adam: L2 weight decay added to the gradient
      return std::make_unique<optim::Adam>(o.betas[0], o.betas[1], o.eps, o.weight_decay, /*decoupled=*/false);
    case Optimizer::adamw:
      return std::make_unique<optim::Adam>(o.betas[0], o.betas[1], o.eps, o.weight_decay, /*decoupled=*/true);
    case Optimizer::sgd:
      return std::make_unique<optim::SGD>(o.momentum, 0.0, o.weight_decay, o.nesterov);
  }
  throw Error("make_optimizer: unknown optimizer");
}

std::unique_ptr<optim::Schedule> make_schedule(const OptimSettings& o, int64_t total_updates) {
  switch (o.schedule) {
    case Schedule::constant:
      return std::make_unique<optim::Constant>(o.lr);
    case Schedule::inverse_sqrt:
      if (o.warmup_updates == 0) return std::make_unique<optim::Constant>(o.lr); // no warm-up: the peak throughout
      return std::make_unique<optim::InverseSqrt>(o.lr, o.warmup_updates, o.warmup_init_lr);
    case Schedule::cosine: {
      optim::CosineOptions c;
      c.max_lr = o.lr, c.min_lr = o.min_lr, c.warmup_steps = o.warmup_updates, c.warmup_init_lr = o.warmup_init_lr;
      c.period = static_cast<double>(std::max<int64_t>(1, total_updates - o.warmup_updates));
      return std::make_unique<optim::Cosine>(c);
    }
    case Schedule::linear:
      return std::make_unique<optim::Linear>(o.lr, o.warmup_updates, std::max(total_updates, o.warmup_updates + 1),
                                             o.min_lr);
  }
  throw Error("make_schedule: unknown schedule");
}

} // namespace pillars::train
