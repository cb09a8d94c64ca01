// Fuzz target: the readers of a checkpoint's recorded model config and trainer position
// (train/checkpoint_meta.h), which `--resume`, `eval`, `translate` and the rest trust once a
// checkpoint's checksum holds, and which a hand-edited or foreign file feeds anything.
//
// Feeds: the input as JSON, {"model": M, "state": S}: M to transformer_config_from_json, S to
// trainer_state_from_json (what load_checkpoint does with "pillars.model" and "pillars.state").
// Expects: InputError for anything malformed or out of range (tests/fuzz/fuzz_common.h).
// Asserts, when a reader accepts its part: what it returns is in range (a config that validates
// and whose heads divide d_model; a position with epoch >= 1, counts >= 0, a last validated update
// no later than the updates, finite numbers, kept checkpoints named as the run's own plain
// checkpoint_e<E>_u<U>.safetensors files and no more of them than can be kept), and writing it
// back as JSON and reading that again gives the same value.
#include <cmath>

#include <nlohmann/json.hpp>

#include "train/checkpoint_meta.h"
#include "train/limits.h"
#include "tests/fuzz/fuzz_common.h"

using namespace pillars;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json input = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!input.is_object()) return 0;
  const std::string origin = "fuzz.safetensors";

  if (input.contains("model")) {
    TransformerConfig c;
    if (fuzz::run_expecting_errors([&] { c = train::transformer_config_from_json(input["model"], origin); })) {
      fuzz::fuzz_require(c.vocab > 0 && c.d_model > 0 && c.heads > 0 && c.d_model % c.heads == 0,
                         "an accepted config has bad sizes");
      fuzz::fuzz_require(c.pad_id >= 0 && c.pad_id < c.vocab, "an accepted config's pad_id is outside its vocabulary");
      for (const auto& [module, kept] : c.module_heads)
        fuzz::fuzz_require(kept >= 1 && kept <= c.heads, "an accepted config keeps a module's heads out of range");
      fuzz::fuzz_require(
          train::to_json(train::transformer_config_from_json(train::to_json(c), origin)) == train::to_json(c),
          "a config written back and read again differs");
    }
  }
  if (input.contains("state")) {
    train::TrainerState s;
    if (fuzz::run_expecting_errors([&] { s = train::trainer_state_from_json(input["state"], origin); })) {
      fuzz::fuzz_require(s.epoch >= 1 && s.batch_in_epoch >= 0 && s.updates >= 0 && s.bad_validations >= 0,
                         "an accepted position has a negative count");
      fuzz::fuzz_require(s.last_validated_update >= -1 && s.last_validated_update <= s.updates,
                         "an accepted position validated an update it has not made");
      fuzz::fuzz_require(std::isfinite(s.elapsed_seconds) && s.elapsed_seconds >= 0 && std::isfinite(s.best_valid),
                         "an accepted position has a number that is not finite");
      fuzz::fuzz_require(static_cast<int64_t>(s.kept.size()) <= limits::kMaxKeepBest,
                         "an accepted position keeps too many checkpoints");
      for (const auto& [name, score] : s.kept) {
        fuzz::fuzz_require(train::is_kept_checkpoint_name(name) && name.find('/') == std::string::npos &&
                               name.find("..") == std::string::npos,
                           "an accepted position keeps a file that is not one of the run's kept checkpoints");
        fuzz::fuzz_require(std::isfinite(score), "an accepted kept checkpoint has a score that is not finite");
      }
      fuzz::fuzz_require(train::to_json(train::trainer_state_from_json(train::to_json(s), origin)) == train::to_json(s),
                         "a position written back and read again differs");
    }
  }
  return 0;
}
