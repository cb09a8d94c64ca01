// `pillars generate RUN`: text from a trained language model (a decoder-only run), streamed to
// stdout token by token as it is produced (the prompt's last line first, then its continuation);
// the speed goes to stderr.
//
//   pillars generate runs/wt2 --prompt "the meaning of" --max-tokens 50 --top-k 40 --seed 3
//   echo "the meaning of" | pillars generate runs/wt2 --greedy
//
// The prompt goes through the run's text pipeline (tokenizer, BPE, dictionary) as a line of the
// training stream would, without its final eos, after an eos (where every line starts in the
// stream). Generation stops at the end of the line (eos), after --max-tokens tokens, or at the
// context length the model was trained with (data.block_size), whichever comes first.
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/utf8.h"
#include "decode/sample.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "train/pipeline.h"
#include "train/session.h"
#include "tools/commands.h"

namespace pillars::cli {

namespace {

constexpr int64_t kMaxTokensLimit = 1 << 20; // --max-tokens beyond this is a typo, not a request

} // namespace

namespace {

// --temperature's bounds. The sampler divides float32 log-probabilities by T: a T whose 1/T
// overflows (1e-300), or makes the scaled values overflow, is greedy decoding in disguise (--greedy
// says so), and a T so large that every weight rounds to the same value is uniform sampling.
// 1e-4 to 1e4 stays well inside both.
constexpr double kMinTemperature = 1e-4, kMaxTemperature = 1e4;

// --seed: a decimal integer that fits 64 bits, or exit 2 naming the flag (not clamped, not wrapped:
// "-1" is not 2^64 - 1).
uint64_t parse_seed(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, err] = std::from_chars(text.data(), end, value);
  if (text.empty() || err != std::errc() || at != end)
    throw InputError(str_cat("--seed: \"", text, "\" is not an integer from 0 to 18446744073709551615 (2^64 - 1)"));
  return value;
}

} // namespace

Command add_generate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with a trained language model (sampling or greedy)");
  struct Options {
    std::string run, choice, prompt, device = "cpu", precision;
    bool prompt_given = false, greedy = false;
    int64_t max_tokens = 100, top_k = 0;
    double temperature = 1.0, top_p = 1.0;
    std::string seed = "1"; // read strictly below: CLI11 would clamp a number past 2^64 - 1
    int threads = 0;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("run", opt->run, "a language-model run directory, or a checkpoint file in one")->required();
  cmd->add_option("--checkpoint", opt->choice, "which checkpoint of the run (default: the run's eval.checkpoint)")
      ->check(CLI::IsMember({"best", "last", "average"}));
  auto* prompt = cmd->add_option("--prompt", opt->prompt, "the text to continue (default: all of stdin)");
  cmd->add_flag("--greedy", opt->greedy, "always take the most likely token (no sampling)");
  add_allow_unchecked_flag(cmd);
  cmd->add_option("--temperature", opt->temperature,
                  str_cat("divide the log-probabilities by this before sampling: from ", kMinTemperature, " to ",
                          kMaxTemperature, " (default 1)"));
  cmd->add_option("--top-k", opt->top_k,
                  "sample among the k most likely tokens only: >= 0 (0 = all, the default; 1 = greedy)");
  cmd->add_option("--top-p", opt->top_p,
                  "sample among the most likely tokens that make up this much probability: in (0, 1] (default 1)");
  cmd->add_option("--max-tokens", opt->max_tokens,
                  str_cat("generate at most this many tokens: 1 to ", kMaxTokensLimit, " (default 100)"));
  cmd->add_option("--seed", opt->seed,
                  "seed of the sampling: an integer from 0 to 2^64 - 1 (the same seed gives the same text; default 1)");
  cmd->add_option("--device", opt->device, "where to generate: cpu | cuda (default cpu)")
      ->check(CLI::IsMember(enum_names<Device>()));
  cmd->add_option("--threads", opt->threads, "CPU threads (0 = all cores)")->check(threads_range());
  cmd->add_option("--precision", opt->precision,
                  "precision on the CPU: fp32 | bf16 (default: the run's eval.precision)")
      ->check(CLI::IsMember(enum_names<Precision>()));
  return {
      cmd, [opt, prompt]() {
        // Every flag checked before anything is loaded: exit 2 naming the flag.
        auto refuse = [](const std::string& flag, const std::string& why) {
          throw InputError(str_cat(flag, ": ", why));
        };
        if (opt->max_tokens < 1 || opt->max_tokens > kMaxTokensLimit)
          refuse("--max-tokens", str_cat(opt->max_tokens, " is not in [1, ", kMaxTokensLimit, "]"));
        if (!(opt->temperature >= kMinTemperature && opt->temperature <= kMaxTemperature))
          refuse("--temperature",
                 str_cat(opt->temperature, " is not in [", kMinTemperature, ", ", kMaxTemperature,
                         "]: the sampler divides float32 log-probabilities by it, which overflow below "
                         "and all become equal above (for the most likely token use --greedy)"));
        const uint64_t seed = parse_seed(opt->seed);
        if (!(opt->top_p > 0 && opt->top_p <= 1)) refuse("--top-p", str_cat(opt->top_p, " is not in (0, 1]"));
        if (opt->top_k < 0) refuse("--top-k", str_cat(opt->top_k, " must be >= 0"));
        if (opt->threads < 0 || opt->threads > 4096) refuse("--threads", str_cat(opt->threads, " is not in [0, 4096]"));
        if (opt->threads > 0) omp_set_num_threads(opt->threads);
        const Device device = device_flag(opt->device);

        const std::string run_dir = train::run_dir_of(opt->run);
        const Experiment e = train::load_run_config(run_dir);
        if (e.task != Task::language_modeling)
          throw InputError(str_cat(run_dir, " is a ", enum_name(e.task),
                                   " run; `pillars generate` needs a language_modeling "
                                   "run (use `pillars translate` for an encoder-decoder)"));
        const train::TextPipeline pipeline = train::TextPipeline::load(run_dir);
        std::string text = opt->prompt;
        if (prompt->count() == 0)
          text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        // The context: eos, then every prompt line's ids (each line ends in eos, as in the
        // training stream), without the last eos.
        // Text only: a line that is not valid UTF-8 or holds a NUL byte is refused, naming it.
        const char* source = prompt->count() ? "--prompt" : "the prompt on stdin";
        std::vector<int32_t> context = {tokens::kEos}, line_ids;
        size_t start = 0;
        for (int64_t number = 1; start <= text.size(); ++number) {
          const size_t end = std::min(text.find('\n', start), text.size());
          const std::string line = text.substr(start, end - start);
          if (const size_t at = line.find('\0'); at != std::string::npos)
            refuse(str_cat(source, ", line ", number),
                   str_cat("holds a NUL byte (at byte ", at + 1, "); give text to continue"));
          if (const size_t at = invalid_utf8_at(line); at != std::string::npos)
            refuse(str_cat(source, ", line ", number), str_cat("not valid UTF-8 (byte ", at + 1, " is 0x",
                                                               hex_byte(line[at]), "); give UTF-8 text to continue"));
          if (line.find_first_not_of(" \t\r") != std::string::npos) {
            line_ids = pipeline.ids(pipeline.segment(line, false));
            context.insert(context.end(), line_ids.begin(), line_ids.end());
          }
          start = end + 1;
        }
        if (!line_ids.empty()) line_ids.pop_back(); // its eos
        if (context.size() > 1) context.pop_back(); // the last line's eos: we continue that line
        if (context.size() == 1) refuse(source, "is empty (no tokens after tokenization); give some text to continue");
        const int64_t positions = e.data.block_size; // the context length the model was trained with
        if (static_cast<int64_t>(context.size()) > positions)
          refuse(source,
                 str_cat("has ", context.size() - 1, " tokens; the model was trained on contexts of ", positions,
                         " (data.block_size), so at most ", positions - 1, " fit with a token to generate"));
        const int64_t max_tokens =
            std::min<int64_t>(opt->max_tokens, positions - static_cast<int64_t>(context.size()) + 1);

        const std::string path = train::checkpoint_path(opt->run, opt->choice, false);
        train::LoadedCheckpoint ck = train::load_checkpoint(path);
        train::check_run_checkpoint(ck, path, pipeline, run_dir, e); // its dictionary and its model
        ck.params.to(device);
        decode::StepDecoder decoder(ck.config, ck.params, device);
        const Precision precision =
            opt->precision.empty() ? e.eval.precision : parse_enum<Precision>(opt->precision, "--precision");
        if (precision == Precision::bf16 && device != Device::cpu)
          refuse("--precision", "bf16 generates on the CPU; on a GPU the precision is the device's");
        decoder.set_precision(precision);
        decode::SamplingOptions so;
        so.greedy = opt->greedy;
        so.temperature = static_cast<float>(opt->temperature);
        so.top_k = opt->top_k;
        so.top_p = static_cast<float>(opt->top_p);
        so.seed = seed;

        // Streaming: the prompt's last line, then, after each token, what the detokenized line
        // gained (detokenizing the whole line keeps the spacing right).
        std::vector<int32_t> shown = line_ids;
        std::string printed;
        auto show = [&] {
          const std::string now = pipeline.decode_target(shown);
          if (now.size() > printed.size() && now.compare(0, printed.size(), printed) == 0) {
            std::fputs(now.c_str() + printed.size(), stdout);
            std::fflush(stdout);
            printed = now;
          }
        };
        show();
        int64_t generated = 0;
        const auto t0 = std::chrono::steady_clock::now();
        decode::generate(decoder, context, max_tokens, so, [&](int32_t id) {
          ++generated;
          if (id == tokens::kEos) return;
          shown.push_back(id);
          show();
        });
        std::fputs("\n", stdout);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(
            stderr, "generated %lld tokens after a prompt of %zu in %.2fs: %.1f tokens/s (%s, %s, %d threads)\n",
            static_cast<long long>(generated), context.size() - 1, s, s > 0 ? static_cast<double>(generated) / s : 0.0,
            path.c_str(), device_name(device), omp_get_max_threads());
        return 0;
      }};
}

} // namespace pillars::cli
