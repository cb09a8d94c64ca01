// See transformer_config.h.
#include "models/transformer_config.h"

#include "base/error.h"

namespace pillars {

int64_t TransformerConfig::heads_of(const std::string& module) const {
  const auto it = module_heads.find(module);
  return it == module_heads.end() ? heads : it->second;
}

void TransformerConfig::validate() const {
  auto require = [](bool ok, const auto&... msg) {
    if (!ok) throw InputError(str_cat("transformer config: ", msg...));
  };
  require(vocab > 0 && d_model > 0 && heads > 0 && ffn > 0, "vocab, d_model, heads and ffn must be positive (got ",
          vocab, ", ", d_model, ", ", heads, ", ", ffn, ")");
  require(!decoder_only || enc_layers == 0, "a decoder-only model has no encoder layers (got ", enc_layers, ")");
  require(enc_layers >= 0 && dec_layers >= 1, "need enc_layers >= 0 and dec_layers >= 1 (got ", enc_layers, ", ",
          dec_layers, ")");
  require(d_model % heads == 0, "d_model ", d_model, " is not a multiple of heads ", heads);
  require(d_model >= 4, "d_model ", d_model, " is too small for sinusoidal positions (need >= 4)");
  for (float p : {dropout, attention_dropout, activation_dropout})
    require(p >= 0.0f && p < 1.0f, "dropout probabilities must lie in [0, 1), got ", p);
  require(pad_id >= 0 && pad_id < vocab, "pad_id ", pad_id, " outside the vocabulary of ", vocab);
  for (const auto& [module, kept] : module_heads)
    require(kept >= 1 && kept <= heads, "module '", module, "' keeps ", kept, " heads; must be 1..", heads);
}

} // namespace pillars
