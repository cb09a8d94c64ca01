// `pillars bench gemm|attention|softmax|step|gct|pruned-decode [--device cuda]`: our figure next to the reference's, from the same run.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>

#include "tools/bench/bench_attention.h"
#include "tools/bench/bench_cuda.h"
#include "tools/bench/bench_ght.h"
#include "tools/bench/bench_gemm.h"
#include "tools/bench/bench_step.h"
#include "base/error.h"
#include "tools/commands.h"

namespace pillars::cli {

Command add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: ours vs the reference (OpenBLAS, naive attention, PyTorch)");
  struct Options {
    std::string what;
    int threads = 0;
    int repeats = 5;
    std::string device = "cpu";
  };
  auto opt = std::make_shared<Options>();
  bench->add_option("what", opt->what, "gemm | attention | softmax | step | gct | pruned-decode")
      ->required()
      ->check(CLI::IsMember({"gemm", "attention", "softmax", "step", "gct", "pruned-decode"}));
  bench->add_option("--threads", opt->threads, "threads for ours and the reference (default: all cores)")->check(CLI::NonNegativeNumber);
  bench->add_option("--repeats", opt->repeats, "timed repetitions (the median is reported)")->check(CLI::PositiveNumber);
  bench->add_option("--device", opt->device, "cpu | cuda (attention, softmax, step: our CUDA kernels next to cuDNN and PyTorch)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  return {bench, [opt]() {
            if (opt->device == "cuda") {
              if (opt->what == "attention") return bench::bench_cuda_attention(std::max(opt->repeats, 10));
              if (opt->what == "softmax") return bench::bench_cuda_softmax(std::max(opt->repeats, 10));
              if (opt->what == "step") return bench::bench_cuda_step(std::max(opt->repeats, 10));
              throw InputError("bench " + opt->what + " --device cuda: not available yet (attention, softmax and step are)");
            }
            if (opt->what == "softmax") throw InputError("bench softmax: only with --device cuda");
            const int threads = opt->threads > 0 ? opt->threads : omp_get_num_procs();
            if (opt->what == "gemm") return bench::bench_gemm(threads, opt->repeats);
            if (opt->what == "attention") return bench::bench_attention(threads, opt->repeats);
            if (opt->what == "gct") return bench::bench_gct(threads, opt->repeats);
            if (opt->what == "pruned-decode") return bench::bench_pruned_decode(threads, opt->repeats);
            return bench::bench_step(threads, opt->repeats);
          }};
}

} // namespace pillars::cli
