// The small translation experiment that the tests of training share: a transformer of d_model 64
// (2 + 2 layers, 4 heads) on a fifth of Multi30k de→en with 2000 BPE merges, a few milliseconds per
// update. A test adds its own "train" (and "heads") section to the JSON and parses it:
//
//   nlohmann::json j = testing::small_multi30k_json(/*seed=*/3);
//   j["train"] = {{"max_updates", 20}, {"valid_bleu", false}};
//   const Experiment e = parse_experiment(j, "test_x.json");
//
// The tests that use it skip without multi30k-de-en in $PILLARS_DATA (testing::have_dataset).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

namespace pillars::testing {

// Every section but "train" and "heads": task, seed, data, model, optim.
inline nlohmann::json small_multi30k_json(int64_t seed) {
  return {{"task", "translation"},
          {"seed", seed},
          {"data",
           {{"dataset", "multi30k-de-en"},
            {"source", "de"},
            {"target", "en"},
            {"bpe_merges", 2000},
            {"max_tokens", 1024},
            {"train_fraction", 0.2}}},
          {"model",
           {{"config", "small"}, {"d_model", 64}, {"heads", 4}, {"ffn", 128}, {"enc_layers", 2}, {"dec_layers", 2}}},
          {"optim", {{"lr", 2e-3}, {"warmup_updates", 50}}}};
}

} // namespace pillars::testing
