// Fuzz target: the experiment loader (train/experiment.h) — the JSON parse, the schema validation
// and the checks that span fields, as `pillars train FILE` runs them on a file's text.
//
// Feeds: the input as an experiment file's text to parse_experiment_text() twice: without a
// context (every dataset and model name accepted, so the fuzzer gets past them) and with the CLI's
// default_validation_context(), which checks the dataset against the registry (its name, task,
// splits and fields). In this build that context knows no model configs (fuzz_stubs.cpp: the model
// code is not linked), so the model section is checked by the schema alone.
// Expects: InputError for anything invalid.
// Asserts, when it loads: the resolved config written as JSON text (to_json, dump) loads back to
// the same Experiment, as experiment.h promises.
#include "tests/fuzz/fuzz_common.h"
#include "train/experiment.h"

using namespace pillars;

namespace {

void check(const std::string& text, const ValidationContext& ctx) {
  Experiment e;
  if (!fuzz::run_expecting_errors([&] { e = parse_experiment_text(text, "fuzz.json", ctx); })) return;
  try {
    fuzz::fuzz_require(parse_experiment_text(to_json(e).dump(2), "fuzz.json", ctx) == e,
                       "to_json + load does not give back the experiment");
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "pillars fuzz: the resolved config of a valid experiment does not load: %s\n", ex.what());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ValidationContext registry = default_validation_context(); // the CLI's, less the model configs
  const std::string text(fuzz::as_text(data, size));
  check(text, ValidationContext{});
  check(text, registry);
  return 0;
}
