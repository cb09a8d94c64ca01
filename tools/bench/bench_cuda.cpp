// `pillars bench attention|softmax --device cuda`: our kernels on the GPU next to the references,
// in one run.
//
// Attention, on FlashAttention's benchmark shapes: hidden 2048 (32 heads of 64 or 16 of 128),
// batch × sequence = 16k tokens, sequence 512 … 16k, causal and not, bf16 inputs. Ours and cuDNN's
// fused attention through our graph-API backend (kernels/cuda/cudnn_attention.h, bf16 tensors in
// place, no conversion) are timed here with CUDA events, in this process; the other references are
// PyTorch's scaled_dot_product_attention with its flash backend and with its cuDNN backend, timed
// by tools/bench/torch_sdpa.py on the same shapes in the same process tree. FLOPs by
// FlashAttention's convention: forward 4·B·H·T²·D (halved when causal), forward+backward 3.5× that.
//
// Softmax: rows of 1k … 256k floats, 2^28 bytes per tensor, forward and backward; GB/s counts every
// byte moved (forward: one read, one write; backward: two reads, one write), next to a
// device-to-device copy (the bandwidth ceiling), cudnnSoftmaxForward/Backward on the same rows (in
// process, kernels/cuda/cudnn_softmax.h), and PyTorch's forward softmax.
// The cuDNN columns print "-" with the reason when cuDNN is unavailable.
#include "tools/bench/bench_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/optim/adam.h"
#include "engine/tensor.h"
#include "models/transformer.h"
#include "train/pass_list.h"
#include "tools/bench/measure.h"
#include "runtime/cuda_device.h"

#ifdef PILLARS_HAVE_CUDA
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/cudnn_softmax.h"
#include "kernels/cuda/softmax.h"
#endif

namespace pillars::bench {

#ifdef PILLARS_HAVE_CUDA
namespace {

// A device buffer of n random bf16 (or f32) values, freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) : p(cuda_malloc_or_throw(bytes)) {}
  ~DeviceBuffer() { cuda_free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

void fill_random_bf16(DeviceBuffer& b, int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> host(static_cast<size_t>(n));
  for (auto& x : host) x = f32_to_bf16(dist(rng));
  cuda_copy_to_device(b.p, host.data(), host.size() * 2);
}

void fill_random_f32(DeviceBuffer& b, int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> host(static_cast<size_t>(n));
  for (auto& x : host) x = dist(rng);
  cuda_copy_to_device(b.p, host.data(), host.size() * 4);
}

// Runs a python reference script and returns its last JSON line ({} when it could not run).
nlohmann::json run_python(const std::string& script, const std::string& args) {
  const std::filesystem::path path = std::filesystem::path(PILLARS_SOURCE_DIR) / "tools/bench" / script;
  const std::string cmd = "python3 " + path.string() + " " + args + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return nlohmann::json::object();
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  if (pclose(pipe) != 0) return nlohmann::json::object();
  // The script's answer is its last line, one JSON object.
  const size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return nlohmann::json::object();
  const size_t begin = out.rfind('\n', end);
  return nlohmann::json::parse(
      out.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1)),
      nullptr, /*allow_exceptions=*/false);
}

struct AttentionShape {
  int64_t B, H, T, D;
  bool causal;
};

std::string key_of(const AttentionShape& s) { return str_cat("T", s.T, "_D", s.D, s.causal ? "_causal" : ""); }

double attention_flops(const AttentionShape& s) {
  const double f = 4.0 * static_cast<double>(s.B * s.H) * static_cast<double>(s.T) * static_cast<double>(s.T) *
                   static_cast<double>(s.D);
  return s.causal ? f / 2 : f;
}

} // namespace

int bench_cuda_attention(int repeats) {
  PILLARS_CHECK(cuda_device_count() > 0, "bench --device cuda: ", cuda_unavailable_reason());
  std::printf(
      "attention on %s: bf16 in/out, fp32 accumulation; hidden 2048, batch x seq = 16k; TFLOP/s (FlashAttention's "
      "count)\n",
      cuda_device_name(0).c_str());
  std::vector<AttentionShape> shapes;
  for (int64_t D : {64, 128})
    for (bool causal : {false, true})
      for (int64_t T : {512, 1024, 2048, 4096, 8192, 16384}) shapes.push_back({16384 / T, 2048 / D, T, D, causal});
  std::string spec;
  for (const auto& s : shapes) spec += str_cat(s.B, ",", s.H, ",", s.T, ",", s.D, ",", s.causal ? 1 : 0, ";");
  const nlohmann::json torch =
      run_python("torch_sdpa.py", "--repeats " + std::to_string(repeats) + " --shapes '" + spec + "'");
  if (torch.empty()) std::printf("(PyTorch references unavailable: python3 with CUDA torch not found)\n");
  const bool cudnn = cuda::cudnn_available();
  if (cudnn)
    std::printf("cuDNN (graph API) columns: cuDNN %s, in this process\n", cuda::cudnn_version_string().c_str());
  else
    std::printf("(cuDNN (graph API) columns skipped: %s)\n", cuda::cudnn_unavailable_reason().c_str());

  // hopper: our wgmma forward with cp.async staging (attention_hopper.cu), tma: the warp-specialized
  // one (attention_hopper_tma.cu), each switched on for its column only (D = 64, 128; the tma column
  // not where PILLARS_SKIP_TMA_FORWARD is set, as tools/gpu_session.sh sets it when the TMA
  // forward's accuracy case failed or hung);
  // cudnn-api: cuDNN through our graph-API backend, in process; torch-cudnn: PyTorch's cuDNN SDPA backend.
  const bool hopper = cuda::hopper_attention_available();
  const cuda::ScopedHopperForward mma_sync_only(
      cuda::HopperForward::off); // the other columns, whatever PILLARS_HOPPER_ATTENTION says
  const bool tma = hopper && std::getenv("PILLARS_SKIP_TMA_FORWARD") == nullptr;
  if (!hopper)
    std::printf(
        "(hopper and tma columns skipped: need a GPU of compute capability 9.x and sm_90a code in this "
        "build)\n");
  else if (!tma)
    std::printf("(tma column skipped: PILLARS_SKIP_TMA_FORWARD is set)\n");
  std::printf("%6s %4s %7s | %9s %7s %7s %9s %11s %9s | %9s %9s %11s %9s\n", "seq", "hd", "causal", "fwd ours",
              "hopper", "tma", "cudnn-api", "torch-cudnn", "torch-fa", "f+b ours", "cudnn-api", "torch-cudnn",
              "torch-fa");
  std::mt19937 rng(1);
  for (const auto& s : shapes) {
    const int64_t n = s.B * s.T * s.H * s.D;
    DeviceBuffer Q(n * 2), K(n * 2), V(n * 2), O(n * 2), dO(n * 2), dQ(n * 2), dK(n * 2), dV(n * 2),
        lse(s.B * s.H * s.T * 4);
    for (DeviceBuffer* b : {&Q, &K, &V, &dO}) fill_random_bf16(*b, n, rng);
    cuda::AttentionArgs a;
    a.B = s.B, a.H = s.H, a.Tq = s.T, a.Tk = s.T, a.D = s.D;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s.D));
    a.causal = s.causal;
    a.precision = cuda::Precision::bf16;
    DeviceBuffer workspace(cuda::attention_backward_workspace(a) + 16);
    using bf16 = __nv_bfloat16;
    auto forward = [&] {
      cuda::attention_forward<bf16>(a, Q.as<bf16>(), K.as<bf16>(), V.as<bf16>(), O.as<bf16>(), lse.as<float>(),
                                    nullptr);
    };
    auto training = [&] {
      forward();
      cuda::attention_backward<bf16>(a, Q.as<bf16>(), K.as<bf16>(), V.as<bf16>(), O.as<bf16>(), lse.as<float>(),
                                     dO.as<bf16>(), dQ.as<bf16>(), dK.as<bf16>(), dV.as<bf16>(), workspace.p);
    };
    const double fwd_ms = cuda_median_ms(repeats, forward), train_ms = cuda_median_ms(repeats, training);
    const double flops = attention_flops(s);
    auto tflops = [](double f, double ms) { return f / (ms * 1e-3) / 1e12; };
    // The forward on a Hopper design, "-" where it did not take the problem.
    auto hopper_tflops = [&](cuda::HopperForward design) {
      if (!hopper || (design == cuda::HopperForward::tma && !tma) || (s.D != 64 && s.D != 128)) return std::string("-");
      const cuda::ScopedHopperForward on(design);
      const int64_t before = cuda::hopper_attention_launches();
      const double ms = cuda_median_ms(repeats, forward);
      return cuda::hopper_attention_launches() > before ? str_cat(static_cast<int>(tflops(flops, ms) + 0.5))
                                                        : std::string("-");
    };
    const std::string hopper_fwd = hopper_tflops(cuda::HopperForward::cp_async),
                      tma_fwd = hopper_tflops(cuda::HopperForward::tma);
    // cuDNN's fused attention through our graph-API backend, on the same bf16 tensors.
    std::string cudnn_fwd = "-", cudnn_train = "-";
    if (cudnn) {
      try {
        cuda::CudnnAttentionArgs ca;
        ca.B = s.B, ca.H = s.H, ca.Tq = s.T, ca.Tk = s.T, ca.D = s.D, ca.scale = a.scale, ca.causal = s.causal;
        ca.bf16_io = true;
        DeviceBuffer ws(
            std::max(cuda::cudnn_attention_forward_workspace(ca), cuda::cudnn_attention_backward_workspace(ca)) + 16);
        auto cudnn_forward = [&] { cuda::cudnn_attention_forward(ca, Q.p, K.p, V.p, O.p, lse.as<float>(), ws.p); };
        auto cudnn_training = [&] {
          cudnn_forward();
          cuda::cudnn_attention_backward(ca, Q.p, K.p, V.p, O.p, lse.as<float>(), dO.p, dQ.p, dK.p, dV.p, ws.p);
        };
        cudnn_fwd = str_cat(static_cast<int>(tflops(flops, cuda_median_ms(repeats, cudnn_forward)) + 0.5));
        cudnn_train = str_cat(static_cast<int>(tflops(3.5 * flops, cuda_median_ms(repeats, cudnn_training)) + 0.5));
      } catch (const Error& e) {
        std::printf("(cuDNN (graph API) failed on T %lld, D %lld: %s)\n", static_cast<long long>(s.T),
                    static_cast<long long>(s.D), e.what());
      }
    }
    auto ref = [&](const char* backend, const char* pass, double f) {
      const std::string key = key_of(s);
      if (!torch.contains(backend) || !torch[backend].contains(key) || !torch[backend][key].contains(pass))
        return std::string("-");
      const double ms = torch[backend][key][pass].get<double>();
      return str_cat(static_cast<int>(tflops(f, ms) + 0.5));
    };
    std::printf("%6lld %4lld %7s | %9.0f %7s %7s %9s %11s %9s | %9.0f %9s %11s %9s\n", static_cast<long long>(s.T),
                static_cast<long long>(s.D), s.causal ? "yes" : "no", tflops(flops, fwd_ms), hopper_fwd.c_str(),
                tma_fwd.c_str(), cudnn_fwd.c_str(), ref("cudnn", "fwd", flops).c_str(),
                ref("flash", "fwd", flops).c_str(), tflops(3.5 * flops, train_ms), cudnn_train.c_str(),
                ref("cudnn", "fwd_bwd", 3.5 * flops).c_str(), ref("flash", "fwd_bwd", 3.5 * flops).c_str());
  }
  return 0;
}

int bench_cuda_softmax(int repeats) {
  PILLARS_CHECK(cuda_device_count() > 0, "bench --device cuda: ", cuda_unavailable_reason());
  const int64_t total = int64_t{1} << 26; // floats per tensor: 256 MiB, far beyond L2
  std::printf(
      "softmax on %s: fp32 rows, %lld floats per tensor; GB/s counts every byte read and written (forward: x, y; "
      "backward: y, dy, dx)\n",
      cuda_device_name(0).c_str(), static_cast<long long>(total));
  std::mt19937 rng(2);
  DeviceBuffer x(total * 4), y(total * 4), dy(total * 4), dx(total * 4);
  fill_random_f32(x, total, rng);
  fill_random_f32(dy, total, rng);
  const double copy_ms = cuda_median_ms(repeats, [&] { cuda_copy_on_device(y.p, x.p, total * 4); });
  const double bytes = 2.0 * static_cast<double>(total) * 4, copy_gbs = bytes / (copy_ms * 1e-3) / 1e9;
  std::printf("device-to-device copy: %.0f GB/s (the ceiling)\n", copy_gbs);
  std::string spec;
  // Up to 8k: registers; on Hopper 16k–64k on clusters of up to 8 blocks, 128k on clusters of 16
  // where the GPU can schedule them; 256k the two-pass kernels (everywhere).
  const std::vector<int64_t> lens{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144};
  for (int64_t len : lens) spec += str_cat(len, ";");
  const nlohmann::json torch =
      run_python("torch_softmax.py", str_cat("--repeats ", repeats, " --total ", total, " --lens '", spec, "'"));
  const bool cudnn = cuda::cudnn_available();
  if (cudnn)
    std::printf(
        "cuDNN columns: cudnnSoftmaxForward/Backward (ACCURATE, INSTANCE), cuDNN %s, in this process; torch: forward "
        "only\n",
        cuda::cudnn_version_string().c_str());
  else
    std::printf("(cuDNN columns skipped: %s)\n", cuda::cudnn_unavailable_reason().c_str());
  std::printf("%7s | %9s %6s %9s %9s | %9s %6s %9s\n", "len", "fwd GB/s", "% copy", "cuDNN", "torch", "bwd GB/s",
              "% copy", "cuDNN");
  const auto gbs = [](double moved, double ms) { return moved / (ms * 1e-3) / 1e9; };
  for (int64_t len : lens) {
    const int64_t rows = total / len;
    const double fwd = gbs(bytes, cuda_median_ms(repeats, [&] {
                             cuda::softmax_forward({.outer = rows, .len = len, .inner = 1, .log = false}, x.as<float>(),
                                                   y.as<float>());
                           }));
    const double bwd = gbs(1.5 * bytes, cuda_median_ms(repeats, [&] {
                             cuda::softmax_backward({.outer = rows, .len = len, .inner = 1, .log = false},
                                                    y.as<float>(), dy.as<float>(), dx.as<float>());
                           }));
    const std::string key = std::to_string(len);
    const std::string theirs =
        torch.contains(key) ? str_cat(static_cast<int>(gbs(bytes, torch[key].get<double>()))) : "-";
    std::string cudnn_fwd = "-", cudnn_bwd = "-";
    if (cudnn) {
      cudnn_fwd = str_cat(static_cast<int>(gbs(bytes, cuda_median_ms(repeats, [&] {
                                                 cuda::cudnn_softmax_forward({.rows = rows, .cols = len}, x.as<float>(),
                                                                             y.as<float>());
                                               }))));
      cudnn_bwd =
          str_cat(static_cast<int>(gbs(1.5 * bytes, cuda_median_ms(repeats, [&] {
                                         cuda::cudnn_softmax_backward({.rows = rows, .cols = len}, y.as<float>(),
                                                                      dy.as<float>(), dx.as<float>());
                                       }))));
    }
    std::printf("%7lld | %9.0f %5.0f%% %9s %9s | %9.0f %5.0f%% %9s\n", static_cast<long long>(len), fwd,
                100.0 * fwd / copy_gbs, cudnn_fwd.c_str(), theirs.c_str(), bwd, 100.0 * bwd / copy_gbs,
                cudnn_bwd.c_str());
  }
  return 0;
}

// ---- a training step of the `base` transformer ------------------------------------------------------
// The paper's base model (6+6 layers, d 512, 8 heads, FFN 2048, vocab 10,000, dropout 0.3, label
// smoothing 0.1), B = 128 pairs of 64 + 64 tokens (8,192 target tokens), Adam. Ours: one CUDA
// executor, the step captured as a CUDA graph, Adam on the device; timed in fp32 and in bf16
// mode. PyTorch: tools/bench/torch_step.py on the GPU with the same shapes, bf16 autocast (fp32
// master weights), nn.Transformer layers (which call scaled_dot_product_attention), eager and
// through torch.compile, in the same run. Memory: the peak of device tensors alive at once, ours
// from our caching allocator (parameters, Adam state, the arena) and PyTorch's from
// torch.cuda.max_memory_allocated (the same things in its allocator); neither counts cuBLAS's or
// cuDNN's private workspaces.
namespace {

constexpr int64_t kStepBatch = 128, kStepLen = 64;

// Median milliseconds of one training step (forward, backward, Adam) of ours in `precision`,
// through the step's pass list with the optional passes `passes` (steps/pass.h);
// peak_mb: the most device memory our tensors held at once, from the parameters on.
double our_step_ms(Precision precision, const steps::PassSettings& passes, int repeats, float& first_loss,
                   double& peak_mb) {
  cuda_set_precision(precision);
  cuda_synchronize();
  cuda_reset_peak_memory();
  const TransformerConfig cfg = transformer_config("base");
  ParamStore params;
  init_transformer_params(cfg, params, 1);
  params.to(Device::cuda);
  steps::StepGraph m =
      steps::StepGraph::of(build_seq2seq_training_graph(cfg, kStepBatch, kStepLen, kStepLen, 0.1f, 1234, true),
                           /*train=*/true, Device::cuda);
  steps::run_passes(train::step_passes(train::StepContext{.train = true, .passes = passes}), m);
  const std::vector<ValueId>& leaves = m.params;
  const std::vector<ValueId>& grads = m.grads;
  Executor ex(m.graph, Device::cuda, nullptr, m.memory);
  ex.enable_graph_capture(true);
  ex.bind_params(params);
  ex.bind("src_tokens", random_token_ids({kStepBatch, kStepLen}, cfg.vocab, 1));
  Tensor lengths = Tensor::empty({kStepBatch}, DType::i32);
  lengths.fill(static_cast<float>(kStepLen));
  ex.bind("src_lengths", lengths);
  ex.bind("prev_output_tokens", random_token_ids({kStepBatch, kStepLen}, cfg.vocab, 2));
  ex.bind("target", random_token_ids({kStepBatch * kStepLen}, cfg.vocab, 3));
  optim::Adam adam(0.9, 0.98, 1e-8, 0.0, false);
  std::vector<optim::ParamSlot> slots;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string& name = m.graph.producer(leaves[i]).name;
    if (grads[i] != kNoValue) slots.push_back({name, params.get(name), ex.value(grads[i])});
  }
  uint64_t seed = 0;
  auto step = [&] {
    ex.set_seed(++seed);
    ex.run();
    adam.step(slots, 5e-4f);
  };
  step();
  first_loss = ex.fetch(m.loss).to_vector()[0];
  const double ms = cuda_median_ms(repeats, step);
  PILLARS_CHECK(ex.replaying_graph(), "bench step: the step was not captured as a CUDA graph");
  peak_mb = static_cast<double>(cuda_peak_memory_bytes()) / (1 << 20);
  return ms;
}

} // namespace

int bench_cuda_step(int repeats) {
  PILLARS_CHECK(cuda_device_count() > 0, "bench --device cuda: ", cuda_unavailable_reason());
  const double tokens = static_cast<double>(kStepBatch * kStepLen);
  std::printf(
      "training step on %s: base transformer 6+6, d 512, 8 heads, FFN 2048, vocab 10000, %lld target tokens, Adam\n",
      cuda_device_name(0).c_str(), static_cast<long long>(kStepBatch * kStepLen));
  double ours_bf16 = 0;
  // fp32; bf16 products; then bf16 products with the saved activations in bf16
  // (train.saved_activations), with the LM head fused with its loss (train.fuse_linear_cross_entropy),
  // and with both.
  struct Row {
    Precision precision;
    steps::PassSettings passes;
    const char* label;
  };
  const Row rows[] = {
      {Precision::fp32, {}, ""},
      {Precision::bf16, {}, ""},
      {Precision::bf16, {.bf16_saved_activations = true}, " saved16"},
      {Precision::bf16, {.fuse_cross_entropy = true}, " fused-ce"},
      {Precision::bf16, {.fuse_cross_entropy = true, .bf16_saved_activations = true}, " saved16+fused-ce"}};
  for (const Row& row : rows) {
    float loss = 0;
    double peak_mb = 0;
    const double ms = our_step_ms(row.precision, row.passes, repeats, loss, peak_mb);
    if (row.precision == Precision::bf16 && *row.label == '\0') ours_bf16 = tokens / (ms * 1e-3);
    std::printf("  pillars %-4s%-17s %9.0f target tokens/s  (%.2f ms/step, peak %.0f MB, first loss %.3f)\n",
                enum_name(row.precision), row.label, tokens / (ms * 1e-3), ms, peak_mb, loss);
  }
  cuda_set_precision(Precision::fp32);
  for (const bool compiled : {false, true}) {
    const nlohmann::json torch = run_python(
        "torch_step.py", str_cat("--device cuda --bf16 --config base --repeats ", repeats, " --batch ", kStepBatch,
                                 " --src-len ", kStepLen, " --tgt-len ", kStepLen, compiled ? " --compile" : ""));
    const char* label = compiled ? "pytorch bf16 compile" : "pytorch bf16 eager  ";
    if (!torch.contains("tokens_per_s")) {
      std::printf("  %s: unavailable (python3 with CUDA torch%s not found)\n", label,
                  compiled ? " 2 (torch.compile)" : "");
      continue;
    }
    const double theirs = torch["tokens_per_s"].get<double>();
    std::printf(
        "  %s  %9.0f target tokens/s  (%.2f ms/step, peak %.0f MB, first loss %.3f; autocast, SDPA)  pillars bf16 "
        "%.2fx\n",
        label, theirs, 1e3 * torch["median_s"].get<double>(), torch.value("peak_device_mb", 0.0),
        torch["first_loss"].get<double>(), ours_bf16 / theirs);
  }
  return 0;
}

#else

int bench_cuda_step(int) { throw Error("bench --device cuda: this build of pillars has no CUDA support"); }
int bench_cuda_attention(int) { throw Error("bench --device cuda: this build of pillars has no CUDA support"); }
int bench_cuda_softmax(int) { throw Error("bench --device cuda: this build of pillars has no CUDA support"); }

#endif

} // namespace pillars::bench
