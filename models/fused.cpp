// See fused.h.
#include "models/fused.h"

#include "base/error.h"
#include "engine/passes/fuse_linear.h"

namespace pillars {

namespace {

void remap(const FusedGraph& f, ValueId& v) {
  if (v == kNoValue) return;
  const ValueId old = v;
  v = f.value(old);
  PILLARS_CHECK(v != kNoValue, "fuse_linear_activation: the model records value ", old, ", which the pass fused away");
}

void remap(const FusedGraph& f, std::vector<AttentionSite>& sites) {
  for (AttentionSite& s : sites) {
    for (ValueId* v : {&s.q, &s.k, &s.v, &s.out, &s.probs, &s.gate, &s.query_lengths, &s.key_lengths}) remap(f, *v);
    if (s.node >= 0) s.node = f.node_map.at(static_cast<size_t>(s.node));
  }
}

} // namespace

int fuse_linear_activation(Seq2SeqGraph& m) {
  FusedGraph f = fuse_linear_activation(m.graph);
  for (ValueId* v : {&m.src_tokens, &m.src_lengths, &m.prev_output_tokens, &m.target, &m.tgt_lengths, &m.encoder_out, &m.logits, &m.loss})
    remap(f, *v);
  remap(f, m.attention);
  m.graph = std::move(f.graph);
  return f.fused;
}

int fuse_linear_activation(LmGraph& m) {
  FusedGraph f = fuse_linear_activation(m.graph);
  for (ValueId* v : {&m.tokens, &m.target, &m.tgt_lengths, &m.logits, &m.loss}) remap(f, *v);
  remap(f, m.attention);
  m.graph = std::move(f.graph);
  return f.fused;
}

} // namespace pillars
