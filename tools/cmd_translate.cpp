// `pillars translate CKPT`: reads source sentences (raw text, one per line) from stdin, writes
// their translations to stdout in the same order; the speed goes to stderr.
#include <omp.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/utf8.h"
#include "decode/search.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "train/evaluate.h"
#include "train/pipeline.h"
#include "train/session.h"
#include "tools/commands.h"
#include "tools/decoding_options.h"

namespace pillars::cli {

namespace {

// The source sentences on stdin, one per line. Text is what is translated: a line that is not
// valid UTF-8 or holds a NUL byte is refused (exit 2, naming the line) before anything is
// decoded, rather than handed to the tokenizer as bytes it cannot read. Odd but valid input has a
// defined output, one line per input line: no input gives no output, a blank line an empty
// translation, a CRLF line ending and a leading byte-order mark are dropped, and a last line
// without its newline still counts.
std::vector<std::string> read_sentences(std::istream& in) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    const std::string where = str_cat("stdin, line ", lines.size() + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lines.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (const size_t at = line.find('\0'); at != std::string::npos)
      throw InputError(
          str_cat(where, ": holds a NUL byte (at byte ", at + 1, "): translate reads text, one sentence per line"));
    if (const size_t at = invalid_utf8_at(line); at != std::string::npos)
      throw InputError(str_cat(where, ": not valid UTF-8 (byte ", at + 1, " is 0x", hex_byte(line[at]),
                               "): translate reads UTF-8 text, one sentence per line"));
    lines.push_back(std::move(line));
  }
  return lines;
}

} // namespace

Command add_translate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("translate", "Translate stdin to stdout with a trained checkpoint (beam search)");
  struct Options {
    std::string checkpoint, choice;
    DecodingOverrides decoding;
    int threads = 0;
    std::string device = "cpu", precision;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("checkpoint", opt->checkpoint, "checkpoint file in a run directory, or the run directory")
      ->required();
  cmd->add_option("--checkpoint", opt->choice,
                  "which checkpoint of a run directory (default: the run's eval.checkpoint)")
      ->check(CLI::IsMember({"best", "last", "average"}));
  add_decoding_options(cmd, &opt->decoding);
  cmd->add_option("--threads", opt->threads, "CPU threads (0 = all cores)")->check(threads_range());
  cmd->add_option("--device", opt->device, "where to decode: cpu | cuda")->check(CLI::IsMember(enum_names<Device>()));
  cmd->add_option("--precision", opt->precision,
                  "decoding precision on the CPU: fp32 | bf16 (default: the run's eval.precision)")
      ->check(CLI::IsMember(enum_names<Precision>()));
  add_allow_unchecked_flag(cmd);
  return {
      cmd, [opt]() {
        if (opt->threads > 0) omp_set_num_threads(opt->threads);
        const Device device = device_flag(opt->device);
        const std::string run_dir = train::run_dir_of(opt->checkpoint);
        const Experiment e = train::load_run_config(run_dir);
        if (e.task == Task::language_modeling)
          throw InputError(str_cat(run_dir,
                                   " is a language model run; `pillars translate` needs an encoder-decoder "
                                   "(translation or summarization) run"));
        const std::string path = train::checkpoint_path(opt->checkpoint, opt->choice, false);
        train::LoadedCheckpoint ck = train::load_checkpoint(path);
        const train::TextPipeline pipeline = train::TextPipeline::load(run_dir);
        train::check_run_checkpoint(ck, path, pipeline, run_dir, e); // its dictionary and its model
        const std::vector<std::string> lines = read_sentences(std::cin);
        decode::SearchOptions so = train::search_options(e.eval, ck.config); // the run's, unless overridden
        const DecodingOverrides& d = opt->decoding;
        if (d.beam > 0) so.beam = d.beam;
        if (d.lenpen >= 0) so.lenpen = static_cast<float>(d.lenpen);
        if (d.max_len_a >= 0) so.max_len_a = static_cast<float>(d.max_len_a);
        if (d.max_len_b >= 0) so.max_len_b = d.max_len_b;
        const int64_t batch = d.batch > 0 ? d.batch : e.eval.batch_sentences;
        const Precision precision =
            opt->precision.empty() ? e.eval.precision : parse_enum<Precision>(opt->precision, "--precision");
        if (precision == Precision::bf16 && device != Device::cpu)
          throw InputError("--precision bf16 decodes on the CPU; on a GPU the precision is the device's");
        const train::Translations t = train::translate_corpus(ck.config, ck.params.on(device), pipeline, lines, so,
                                                              batch, false, e.data.max_source_len, precision);
        for (const std::string& s : t.text) std::printf("%s\n", s.c_str());
        if (!t.truncated.empty())
          std::fprintf(stderr,
                       "warning: %zu input line%s (line %zu first) had more than data.max_source_len = %lld tokens and "
                       "%s translated from the first %lld only, as in training\n",
                       t.truncated.size(), t.truncated.size() == 1 ? "" : "s", t.truncated.front() + 1,
                       static_cast<long long>(e.data.max_source_len), t.truncated.size() == 1 ? "was" : "were",
                       static_cast<long long>(e.data.max_source_len - 1));
        std::fprintf(stderr, "translated %zu sentences in %.2fs: %.1f sentences/s (%s, beam %lld, %s, %d threads)%s\n",
                     lines.size(), t.seconds, t.sentences_per_second(), path.c_str(), static_cast<long long>(so.beam),
                     device_name(device), omp_get_max_threads(), train::load_note(t).c_str());
        return 0;
      }};
}

} // namespace pillars::cli
