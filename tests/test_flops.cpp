// count_flops on the transformer's forward graph, against the count written out by hand.
#include <doctest/doctest.h>

#include "engine/passes/flops.h"
#include "models/transformer.h"

using namespace pillars;

TEST_CASE("flops: the transformer forward graph costs what the layer formulas say") {
  TransformerConfig cfg = transformer_config("tiny");
  const int64_t B = 3, Ts = 7, Tt = 5;
  const Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, 0.0f, 0, /*train=*/false);
  const FlopCount c = count_flops(m.graph);
  const double d = static_cast<double>(cfg.d_model), F = static_cast<double>(cfg.ffn),
               V = static_cast<double>(cfg.vocab);
  const double H = static_cast<double>(cfg.heads), Dh = static_cast<double>(cfg.head_dim());
  const double src = B * Ts, tgt = B * Tt; // rows
  const double encoder_layer = 4 * 2 * src * d * d + 2 * 2 * src * d * F;
  const double decoder_layer = 4 * 2 * tgt * d * d                         // self-attention projections
                               + 2 * 2 * tgt * d * d + 2 * 2 * src * d * d // cross: q, out on targets; k, v on sources
                               + 2 * 2 * tgt * d * F;
  const double matmul = cfg.enc_layers * encoder_layer + cfg.dec_layers * decoder_layer + 2 * tgt * d * V;
  CHECK(c.matmul == doctest::Approx(matmul).epsilon(1e-12));
  const double attention = cfg.enc_layers * 4 * B * H * Ts * Ts * Dh +
                           cfg.dec_layers * (4 * B * H * Tt * Tt * Dh / 2 + 4 * B * H * Tt * Ts * Dh);
  CHECK(c.attention == doctest::Approx(attention).epsilon(1e-12));
  CHECK(c.other > 0);
  CHECK(c.other < 0.5 * c.total());
}
