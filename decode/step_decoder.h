// Incremental decoding through the executor: the encoder graph once per batch, then one
// decoder-step graph per generated position (models/decoding.h), on the CPU or a CUDA device.
// This class owns the key/value caches and the compiled graphs; decode/search.h and
// decode/sample.h decide what to feed it.
//
//   StepDecoder dec(cfg, params, Device::cpu);           // params on that device
//   dec.start(sources, /*rows_per_sentence=*/beam, /*capacity=*/max_len + 1);
//   StepDecoder::Step s;  s.tokens = ...; s.positions = ...; s.row_origin = ...; ...
//   dec.step(s);                                         // caches updated in place, on the device
//   dec.candidates(scores, index);                       // beam head: (B, n) to the host
//   Tensor lp = dec.log_probs();                         // or the (N, V) log-probabilities
//
// Rows and sentences. After start(), rows r·k … r·k + k − 1 belong to sentence r. Each step names,
// per row, the row of the previous step it continues (row_origin: the chosen beams) and, per
// sentence, the previous sentence it is (sentence_origin). A step with fewer rows than the last
// one compacts the caches: finished sentences leave the batch and the step costs what the live
// rows cost. The first step continues the rows of start() (identity origins).
//
// Precision (CPU). The decoder's products (its matmuls and fused attention, encoder included) run
// at the CPU's matmul precision (kernels/cpu/gemm_precision.h): the process's, or the one given by
// set_precision for the decoder's own calls. In bf16 each weight matrix is rounded and packed once,
// on its first product, into the bf16 GEMM's layout and kept for the decoder's life (a
// Bf16WeightCache installed during start and step), instead of being packed again by every
// small-M product of every step: the parameters must not change while the decoder lives. The
// same bits as packing per call. In bf16 the self-attention caches also hold bf16 values, each key
// and value rounded once as a step writes it (engine/ops/decoding.h: cache_write), which the step's
// attention reads without rounding again: change the precision between batches, not within one.
// On a GPU the precision is cuda_set_precision's; set_precision refuses bf16 there.
//
// Graphs are compiled per step shape (rows, rows before, ...), once, and kept while the source
// length and capacity stay those of the batch; all of them share one arena. On a CUDA device the
// steady steps (same shape, same bindings) are captured as a CUDA graph and replayed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "base/special_tokens.h"
#include "engine/executor.h"
#include "base/precision.h"
#include "engine/params.h"
#include "kernels/cpu/gemm_precision.h"
#include "models/decoding.h"

namespace pillars::decode {

class StepDecoder {
 public:
  // Keeps references to both: they must outlive the decoder. The parameters must be on `device`.
  StepDecoder(const TransformerConfig& cfg, const ParamStore& params, Device device = Device::cpu);
  ~StepDecoder();

  const TransformerConfig& config() const { return cfg_; }
  Device device() const { return device_; }

  // The matmul precision of this decoder's start and step calls (CPU only: bf16 on a GPU throws
  // pillars::Error). Until called, the process's (cpu::matmul_precision()).
  void set_precision(Precision p);
  // Weight matrices packed for bf16 so far, and their bytes (0 in fp32).
  int64_t packed_weights() const { return weights_->packed_matrices(); }
  int64_t packed_weight_bytes() const { return weights_->packed_bytes(); }

  // Seq2seq: runs the encoder over sources[b] (ids, eos last) and makes caches for
  // sources.size() · rows_per_sentence rows of `capacity` target slots.
  void start(const std::vector<std::vector<int32_t>>& sources, int64_t rows_per_sentence, int64_t capacity);
  // Decoder-only: caches for `rows` rows (one per sequence) of `capacity` slots.
  void start(int64_t rows, int64_t capacity);

  struct Step {
    std::vector<int32_t> tokens;          // (N) the token each row is fed
    std::vector<int32_t> positions;       // (N) its position = the slots the row has filled
    std::vector<int32_t> row_origin;      // (N) the previous step's row it continues
    std::vector<int32_t> sentence_origin; // (B) seq2seq: the previous step's sentence it is
    int64_t rows_per_sentence = 1;        // k: N = B · k
    // The beam head (engine/ops/decoding.h's beam_candidates), when candidates > 0:
    int64_t candidates = 0;        // n kept per sentence
    std::vector<float> row_scores; // (N) cumulative log-probability (−inf: no hypothesis)
    std::vector<int32_t> eos_rule; // (N) 0 eos banned, 1 allowed, 2 only eos
    int32_t pad = tokens::kPad, bos = tokens::kBos, eos = tokens::kEos;
  };
  // One decoding step on the device. Checks the step against the decoder's state (throws
  // pillars::Error naming the field).
  void step(const Step& s);
  int64_t rows() const { return rows_; } // rows of the caches after the last step
  int64_t sentences() const { return sentences_; }
  int64_t capacity() const { return capacity_; }

  // The last step's log-probabilities (N, V), copied to the host.
  Tensor log_probs() const;
  // The last step's beam candidates (B, n), copied to the host.
  void candidates(std::vector<float>& scores, std::vector<int32_t>& index) const;

  // Step graphs compiled so far (for tests and benchmarks).
  int64_t compiled_steps() const { return compiled_; }

 private:
  struct Compiled {
    std::unique_ptr<DecoderStepGraph> graph;
    std::unique_ptr<Executor> executor;
  };
  struct CompiledEncoder {
    std::unique_ptr<EncoderGraph> graph;
    std::unique_ptr<Executor> executor;
  };
  Compiled& compiled(const DecoderStepShape& shape);
  void bind_params(Executor& ex, const Graph& g) const;
  void allocate_caches(int64_t rows, int64_t sentences, int64_t source_len);
  // Sets the decoder's precision and installs its weight cache for one call (CPU).
  struct CallScope {
    explicit CallScope(const StepDecoder& d);
    std::optional<cpu::ScopedMatmulPrecision> precision;
    cpu::ScopedBf16Weights weights;
  };

  const TransformerConfig& cfg_;
  const ParamStore& params_;
  Device device_;
  bool capture_ = true;
  std::shared_ptr<SharedArena> arena_;
  std::map<DecoderStepShape, Compiled> steps_;
  std::map<std::pair<int64_t, int64_t>, CompiledEncoder> encoders_;
  std::vector<CacheSpec> cache_specs_;
  std::vector<Tensor> caches_;       // full size, on the device, in cache_specs_ order
  std::vector<int32_t> src_lengths_; // (sentences_) the live sentences' source lengths
  int64_t rows_ = 0, sentences_ = 0, source_len_ = 0, capacity_ = 0;
  Executor* last_ = nullptr; // the executor of the last step
  const DecoderStepGraph* last_graph_ = nullptr;
  int64_t compiled_ = 0;
  std::optional<Precision> precision_;
  std::unique_ptr<cpu::Bf16WeightCache> weights_ = std::make_unique<cpu::Bf16WeightCache>();
};

} // namespace pillars::decode
