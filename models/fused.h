// The transformer's graphs through the fuse_linear_activation pass (engine/passes/fuse_linear.h),
// with every ValueId the model structs hold — inputs, logits, loss, the attention sites the GHT
// passes read — moved to the rewritten graph. In the transformer the pass fuses each FFN's
// fc1 → relu/gelu (one chain per layer); attention nodes and their values are copied unchanged.
//
//   Seq2SeqGraph m = build_seq2seq_training_graph(cfg, B, Ts, Tt, options);
//   fuse_linear_activation(m);                    // before extensions and autodiff
//   autodiff(m.graph, m.loss, m.graph.params());
#pragma once
#include "models/transformer.h"

namespace pillars {

// Both return the number of chains fused. Throws if a recorded value was fused away (a site
// pointing at an FFN's pre-activation, which no builder records).
int fuse_linear_activation(Seq2SeqGraph& m);
int fuse_linear_activation(LmGraph& m);

} // namespace pillars
