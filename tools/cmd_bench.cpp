// `pillars bench gemm|attention|softmax|step|gct|pruned-decode|decode [--device cuda]`: our figure next to
// the reference's, from the same run. `bench gemm --precision bf16`: the bf16 GEMM; `bench step
// --precision bf16`: our step at the CPU's matmul precision fp32 and bf16; `bench decode --precision
// bf16`: our beam search at the decoder's precision fp32 and bf16.
#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "base/error.h"
#include "engine/tensor.h"
#include "runtime/cuda_device.h"
#include "tools/bench/bench_attention.h"
#include "tools/bench/bench_cuda.h"
#include "tools/bench/bench_decode.h"
#include "tools/bench/bench_ght.h"
#include "tools/bench/bench_gemm.h"
#include "tools/bench/bench_data_parallel.h"
#include "tools/bench/bench_step.h"
#include "engine/dist/communicator.h"
#include "tools/commands.h"

namespace pillars::cli {

namespace {

// Every benchmark, with what it runs on each device (nullptr: not on that device).
struct Benchmark {
  const char* name;
  int (*cpu)(int threads, int repeats);
  int (*cuda)(int repeats);
};
constexpr std::array kBenchmarks = {
    Benchmark{"gemm", bench::bench_gemm, nullptr},
    Benchmark{"attention", bench::bench_attention, bench::bench_cuda_attention},
    Benchmark{"softmax", nullptr, bench::bench_cuda_softmax},
    Benchmark{"step", bench::bench_step, bench::bench_cuda_step},
    Benchmark{"gct", bench::bench_gct, nullptr},
    Benchmark{"pruned-decode", bench::bench_pruned_decode, nullptr},
    Benchmark{"decode", bench::bench_decode, nullptr},
};

} // namespace

Command add_bench_command(CLI::App& app) {
  CLI::App* bench =
      app.add_subcommand("bench", "Benchmarks: ours vs the reference (OpenBLAS, naive attention, PyTorch)");
  struct Options {
    std::string what;
    int threads = 0;
    int repeats = 5;
    int ranks = 0;
    std::string device = "cpu";
    std::string precision = "fp32";
  };
  auto opt = std::make_shared<Options>();
  std::vector<std::string> names;
  for (const Benchmark& b : kBenchmarks) names.push_back(b.name);
  bench->add_option("what", opt->what, "gemm | attention | softmax | step | gct | pruned-decode | decode")
      ->required()
      ->check(CLI::IsMember(names));
  bench->add_option("--threads", opt->threads, "threads for ours and the reference (default: all cores)")
      ->check(threads_range());
  bench->add_option("--repeats", opt->repeats, "timed repetitions (the median is reported)")
      ->check(CLI::PositiveNumber);
  bench
      ->add_option(
          "--ranks", opt->ranks,
          "step only: data-parallel, N ranks x --threads (default 1) each, started with mpirun, against one process "
          "with N x --threads threads")
      ->check(CLI::Range(2, 64));
  bench
      ->add_option("--device", opt->device,
                   "cpu | cuda (attention, softmax, step: our CUDA kernels next to cuDNN and PyTorch)")
      ->check(CLI::IsMember(enum_names<Device>()));
  bench
      ->add_option(
          "--precision", opt->precision,
          "gemm, step and decode on the CPU only: fp32 | bf16 (gemm: operands in bf16, fp32 accumulation, next to our "
          "fp32 and oneDNN; step: our step at matmul precision fp32, then bf16, then PyTorch bf16 autocast; decode: "
          "our beam search at precision fp32, then bf16)")
      ->check(CLI::IsMember(enum_names<Precision>()));
  return {bench, [opt]() {
            const Device device = parse_enum<Device>(opt->device, "--device");
            if (parse_enum<Precision>(opt->precision, "--precision") == Precision::bf16) {
              if ((opt->what != "gemm" && opt->what != "step" && opt->what != "decode") || device != Device::cpu ||
                  opt->ranks > 0)
                throw InputError(str_cat("bench ", opt->what,
                                         " --precision bf16: only bench gemm, step and decode on the CPU (one "
                                         "process) have a bf16 precision"));
              const int threads = opt->threads > 0 ? opt->threads : omp_get_num_procs();
              if (opt->what == "decode") return bench::bench_decode_bf16(threads, opt->repeats);
              return opt->what == "gemm" ? bench::bench_gemm_bf16(threads, opt->repeats)
                                         : bench::bench_step_bf16(threads, opt->repeats);
            }
            const auto b = std::find_if(kBenchmarks.begin(), kBenchmarks.end(),
                                        [&](const Benchmark& x) { return x.name == opt->what; });
            PILLARS_CHECK(b != kBenchmarks.end(), "bench: no benchmark ", opt->what); // CLI11 checked the word
            if (device == Device::cuda) {
              if (!b->cuda)
                throw InputError(
                    str_cat("bench ", b->name, " --device cuda: not available (attention, softmax and step are)"));
              if (opt->ranks > 0 || (dist::started_by_launcher() && dist::world().size() > 1))
                throw InputError(str_cat("bench ", b->name,
                                         " --device cuda --ranks: ranks run on CPUs only; the GPU path (NCCL, ",
                                         "one GPU per rank) has no benchmark yet (docs/SCALING.md)"));
              return b->cuda(std::max(opt->repeats, 10));
            }
            if (!b->cpu) throw InputError(str_cat("bench ", b->name, ": only with --device cuda"));
            // Data-parallel: asked for with --ranks, or this process is a rank of a job (mpirun).
            if (opt->ranks > 0 || dist::started_by_launcher()) {
              if (opt->what != "step")
                throw InputError(str_cat("bench ", opt->what, " --ranks: only bench step runs on ranks"));
              return bench::bench_data_parallel(opt->ranks, opt->threads > 0 ? opt->threads : 1, opt->repeats);
            }
            return b->cpu(opt->threads > 0 ? opt->threads : omp_get_num_procs(), opt->repeats);
          }};
}

} // namespace pillars::cli
