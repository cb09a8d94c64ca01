// StepDecoder (see step_decoder.h).
#include "decode/step_decoder.h"

#include <algorithm>

#include "base/error.h"

namespace pillars::decode {

namespace {

// Compiled step graphs kept before the cache is emptied: every live-row count of a batch has its
// own graph, and a corpus has batches of many source lengths.
constexpr size_t kMaxCompiledSteps = 512, kMaxCompiledEncoders = 32;

Tensor i32_tensor(const std::vector<int32_t>& v, const Shape& shape) { return Tensor::from_i32(shape, v); }

} // namespace

StepDecoder::StepDecoder(const TransformerConfig& cfg, const ParamStore& params, Device device)
    : cfg_(cfg), params_(params), device_(device), arena_(std::make_shared<SharedArena>()) {
  cfg.validate();
  arena_->device = device;
  PILLARS_CHECK(params.size() == 0 || params.device() == device, "decoder: the parameters are on the ",
                device_name(params.device()), ", the decoder runs on the ", device_name(device));
  // The weight matrices bf16 products may pack once (only f32 matrices on the host).
  if (device == Device::cpu)
    for (const std::string& name : params.names()) {
      const Tensor& t = params.get(name);
      if (t.dtype() == DType::f32 && t.shape().size() == 2) weights_->allow(t.data<float>());
    }
}

void StepDecoder::set_precision(Precision p) {
  PILLARS_CHECK(device_ == Device::cpu || p == Precision::fp32,
                "decoder: a bf16 decoding precision is for the CPU; "
                "on a GPU the precision is the device's (cuda_set_precision)");
  precision_ = p;
}

StepDecoder::CallScope::CallScope(const StepDecoder& d)
    : weights(d.device_ == Device::cpu ? d.weights_.get() : nullptr) {
  if (d.precision_ && d.device_ == Device::cpu) precision.emplace(*d.precision_);
}

StepDecoder::~StepDecoder() = default;

void StepDecoder::bind_params(Executor& ex, const Graph& g) const {
  for (ValueId v : g.params()) ex.bind(v, params_.get(g.producer(v).name));
}

void StepDecoder::allocate_caches(int64_t rows, int64_t sentences, int64_t source_len) {
  cache_specs_ = decoder_caches(cfg_, rows, sentences, capacity_, source_len);
  caches_.clear();
  // Zeroed once: a row's slots past its length are masked out of attention, but the GPU kernels
  // read whole tiles of keys and multiply the masked values by a probability of 0, and 0 · NaN —
  // left in recycled device memory — is NaN (kernels/cuda/attention.h). Zeros make them harmless.
  for (const CacheSpec& c : cache_specs_) {
    caches_.push_back(Tensor::empty(c.shape, DType::f32, device_));
    caches_.back().fill(0.0f);
  }
}

void StepDecoder::start(const std::vector<std::vector<int32_t>>& sources, int64_t rows_per_sentence, int64_t capacity) {
  PILLARS_CHECK(!cfg_.decoder_only, "decoder: a decoder-only model has no sources; use start(rows, capacity)");
  PILLARS_CHECK(!sources.empty() && rows_per_sentence >= 1 && capacity >= 1,
                "decoder: start needs sources, rows_per_sentence >= 1 and capacity >= 1");
  const int64_t B = static_cast<int64_t>(sources.size());
  int64_t Ts = 0;
  std::vector<int32_t> lengths;
  for (const auto& s : sources) {
    PILLARS_CHECK(!s.empty(), "decoder: an empty source sentence (it must end with eos at least)");
    Ts = std::max<int64_t>(Ts, static_cast<int64_t>(s.size()));
    lengths.push_back(static_cast<int32_t>(s.size()));
  }
  const CallScope scope(*this);
  if (Ts != source_len_ || capacity != capacity_ || steps_.size() > kMaxCompiledSteps) steps_.clear();
  if (encoders_.size() > kMaxCompiledEncoders) encoders_.clear();
  capacity_ = capacity, source_len_ = Ts;

  CompiledEncoder& enc = encoders_[{B, Ts}];
  if (!enc.graph) {
    enc.graph = std::make_unique<EncoderGraph>(build_encoder_graph(cfg_, B, Ts));
    enc.executor = std::make_unique<Executor>(enc.graph->graph, device_, arena_);
    bind_params(*enc.executor, enc.graph->graph);
  }
  std::vector<int32_t> ids(static_cast<size_t>(B * Ts), static_cast<int32_t>(cfg_.pad_id));
  for (int64_t b = 0; b < B; ++b) std::copy(sources[b].begin(), sources[b].end(), ids.begin() + b * Ts);
  const Tensor src = i32_tensor(ids, {B, Ts}), len = i32_tensor(lengths, {B});
  enc.executor->bind(enc.graph->src_tokens, src);
  enc.executor->bind(enc.graph->src_lengths, len);
  enc.executor->run();

  allocate_caches(B * rows_per_sentence, B, Ts);
  for (size_t i = 0, l = 0; i < cache_specs_.size(); ++i) {
    if (!cache_specs_[i].cross) continue;
    const bool is_k = cache_specs_[i].name.ends_with(".k_cache");
    caches_[i].copy_from(enc.executor->value(is_k ? enc.graph->cross_k[l] : enc.graph->cross_v[l]));
    if (!is_k) ++l;
  }
  src_lengths_ = lengths;
  rows_ = B * rows_per_sentence, sentences_ = B;
  last_ = nullptr, last_graph_ = nullptr;
}

void StepDecoder::start(int64_t rows, int64_t capacity) {
  PILLARS_CHECK(cfg_.decoder_only, "decoder: an encoder-decoder model decodes from sources; use start(sources, ...)");
  PILLARS_CHECK(rows >= 1 && capacity >= 1, "decoder: start needs rows >= 1 and capacity >= 1");
  if (capacity != capacity_ || steps_.size() > kMaxCompiledSteps) steps_.clear();
  capacity_ = capacity, source_len_ = 0;
  allocate_caches(rows, 0, 0);
  src_lengths_.clear();
  rows_ = rows, sentences_ = rows;
  last_ = nullptr, last_graph_ = nullptr;
}

StepDecoder::Compiled& StepDecoder::compiled(const DecoderStepShape& shape) {
  Compiled& c = steps_[shape];
  if (!c.graph) {
    c.graph = std::make_unique<DecoderStepGraph>(build_decoder_step_graph(cfg_, shape));
    c.executor = std::make_unique<Executor>(c.graph->graph, device_, arena_);
    bind_params(*c.executor, c.graph->graph);
    if (device_ == Device::cuda) c.executor->enable_graph_capture(capture_);
    ++compiled_;
  }
  return c;
}

void StepDecoder::step(const Step& s) {
  PILLARS_CHECK(rows_ > 0, "decoder: step before start");
  const int64_t N = static_cast<int64_t>(s.tokens.size()), k = s.rows_per_sentence;
  PILLARS_CHECK(N >= 1 && k >= 1 && N % k == 0 && N <= rows_, "decoder: a step of ", N, " rows (", k,
                " per sentence) after a step of ", rows_);
  const int64_t B = N / k;
  auto require_size = [&](size_t got, int64_t want, const char* field) {
    PILLARS_CHECK(static_cast<int64_t>(got) == want, "decoder: step.", field, " has ", got, " entries, expected ",
                  want);
  };
  require_size(s.positions.size(), N, "positions");
  require_size(s.row_origin.size(), N, "row_origin");
  for (int64_t n = 0; n < N; ++n) {
    PILLARS_CHECK(s.positions[n] >= 0 && s.positions[n] < capacity_, "decoder: row ", n, " at position ",
                  s.positions[n], " beyond the ", capacity_, " slots of its cache");
    PILLARS_CHECK(s.row_origin[n] >= 0 && s.row_origin[n] < rows_, "decoder: row ", n, " continues row ",
                  s.row_origin[n], " of ", rows_);
  }
  std::vector<int32_t> src_lengths;
  if (!cfg_.decoder_only) {
    require_size(s.sentence_origin.size(), B, "sentence_origin");
    PILLARS_CHECK(B <= sentences_, "decoder: ", B, " sentences after a step of ", sentences_);
    for (int32_t o : s.sentence_origin) {
      PILLARS_CHECK(o >= 0 && o < sentences_, "decoder: sentence origin ", o, " outside [0, ", sentences_, ")");
      src_lengths.push_back(src_lengths_[static_cast<size_t>(o)]);
    }
  }
  if (s.candidates > 0) {
    require_size(s.row_scores.size(), N, "row_scores");
    require_size(s.eos_rule.size(), N, "eos_rule");
  }
  const CallScope scope(*this);

  DecoderStepShape shape;
  shape.rows = N, shape.rows_before = rows_, shape.rows_per_sentence = k;
  shape.sentences_before = cfg_.decoder_only ? 0 : sentences_;
  shape.source_len = source_len_, shape.capacity = capacity_;
  shape.beam_candidates = s.candidates, shape.pad = s.pad, shape.bos = s.bos, shape.eos = s.eos;
  Compiled& c = compiled(shape);
  const DecoderStepGraph& g = *c.graph;
  Executor& ex = *c.executor;

  std::vector<int32_t> self_lengths(s.positions);
  for (int32_t& l : self_lengths) ++l;
  // Host tensors: bound by reference on the CPU (alive until run() returns), copied on a GPU.
  const Tensor tokens = i32_tensor(s.tokens, {N, 1}), positions = i32_tensor(s.positions, {N}),
               lengths = i32_tensor(self_lengths, {N}), origin = i32_tensor(s.row_origin, {N});
  ex.bind(g.tokens, tokens);
  ex.bind(g.positions, positions);
  ex.bind(g.self_lengths, lengths);
  ex.bind(g.row_origin, origin);
  Tensor sentence_origin, src_len, scores, rule;
  if (!cfg_.decoder_only) {
    sentence_origin = i32_tensor(s.sentence_origin, {B});
    src_len = i32_tensor(src_lengths, {B});
    ex.bind(g.sentence_origin, sentence_origin);
    ex.bind(g.src_lengths, src_len);
  }
  if (s.candidates > 0) {
    scores = Tensor::from({N}, s.row_scores);
    rule = i32_tensor(s.eos_rule, {N});
    ex.bind(g.row_scores, scores);
    ex.bind(g.eos_rule, rule);
  }
  for (size_t i = 0; i < caches_.size(); ++i) // the first rows of each cache: the rows the last step left
    ex.bind(g.cache_leaves[i], caches_[i].slice0(0, cache_specs_[i].cross ? sentences_ : rows_));
  ex.run();

  rows_ = N;
  if (!cfg_.decoder_only)
    sentences_ = B, src_lengths_ = std::move(src_lengths);
  else
    sentences_ = N;
  last_ = &ex, last_graph_ = &g;
}

Tensor StepDecoder::log_probs() const {
  PILLARS_CHECK(last_ != nullptr, "decoder: no step has run");
  return last_->fetch(last_graph_->log_probs);
}

void StepDecoder::candidates(std::vector<float>& scores, std::vector<int32_t>& index) const {
  PILLARS_CHECK(last_ != nullptr && last_graph_->candidates.scores != kNoValue,
                "decoder: the last step had no beam head");
  const Tensor s = last_->fetch(last_graph_->candidates.scores), i = last_->fetch(last_graph_->candidates.index);
  scores.assign(s.data<float>(), s.data<float>() + s.numel());
  index.assign(i.data<int32_t>(), i.data<int32_t>() + i.numel());
}

} // namespace pillars::decode
