// The replaced decoder and its beam search; see legacy_decode.h.
#include "tools/bench/legacy_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/softmax.h"

namespace pillars::bench::legacy {

namespace {

constexpr int64_t kMaxPositions = 1024; // longest source or target sequence the decoder accepts

const float* data_of(const ParamStore& p, const std::string& name) { return p.get(name).data<float>(); }

} // namespace

IncrementalDecoder::IncrementalDecoder(const TransformerConfig& cfg, const ParamStore& params)
    : cfg_(cfg), params_(params) {
  cfg.validate();
  encoder_table_ = data_of(params, encoder_embedding_name(cfg));
  decoder_table_ = data_of(params, decoder_embedding_name(cfg));
  output_matrix_ = data_of(params, output_projection_name(cfg));
  positions_ = sinusoidal_positions(cfg.pad_id + 1, kMaxPositions, cfg.d_model); // once, not every step
  for (int64_t i = 0; i < cfg.enc_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i);
    encoder_.push_back({attention(p + ".self_attn"), norm(p + ".self_attn_layer_norm"), linear(p + ".fc1"),
                        linear(p + ".fc2"), norm(p + ".final_layer_norm")});
  }
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i);
    decoder_.push_back({attention(p + ".self_attn"), norm(p + ".self_attn_layer_norm"), attention(p + ".encoder_attn"),
                        norm(p + ".encoder_attn_layer_norm"), linear(p + ".fc1"), linear(p + ".fc2"),
                        norm(p + ".final_layer_norm")});
  }
  if (cfg.pre_norm) {
    encoder_final_ = norm("encoder.layer_norm");
    decoder_final_ = norm("decoder.layer_norm");
  }
}

IncrementalDecoder::Linear IncrementalDecoder::linear(const std::string& prefix) const {
  const Tensor& w = params_.get(prefix + ".weight");
  PILLARS_CHECK(w.rank() == 2, "decoder: ", prefix, ".weight is not a matrix");
  return {w.data<float>(), data_of(params_, prefix + ".bias"), w.dim(0), w.dim(1)};
}

IncrementalDecoder::Norm IncrementalDecoder::norm(const std::string& prefix) const {
  return {data_of(params_, prefix + ".weight"), data_of(params_, prefix + ".bias")};
}

IncrementalDecoder::Attention IncrementalDecoder::attention(const std::string& module) const {
  return {linear(module + ".q_proj"), linear(module + ".k_proj"), linear(module + ".v_proj"),
          linear(module + ".out_proj"), cfg_.heads_of(module)};
}

void IncrementalDecoder::apply(const Linear& l, const float* x, float* y, int64_t rows) {
  // y (rows, out) = x (rows, in) · Wᵀ, W (out, in); then + b per row.
  cpu::sgemm(false, true, rows, l.out, l.in, 1.0f, x, l.in, l.w, l.in, 0.0f, y, l.out);
#pragma omp parallel for if (rows * l.out > 65536)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < l.out; ++j) y[r * l.out + j] += l.b[j];
}

void IncrementalDecoder::layer_norm(const Norm& n, float* x, int64_t rows) const {
  std::vector<float> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
  cpu::layer_norm_forward(x, n.w, n.b, x, mean.data(), rstd.data(), rows, cfg_.d_model, 1e-5f);
}

void IncrementalDecoder::activation(float* x, int64_t n) const {
  cpu::unary(cfg_.activation == ops::Activation::gelu ? cpu::UnaryKind::gelu : cpu::UnaryKind::relu, x, x, n, 1.0f, 0.0f);
}

namespace {

// x (rows, d) += f(x) as a residual sub-layer, post- or pre-norm. f writes (rows, d) into its
// second argument.
template <class Fn, class Norm>
void residual(bool pre_norm, const Norm& norm, float* x, int64_t rows, int64_t d, Fn f) {
  const size_t n = static_cast<size_t>(rows * d);
  std::vector<float> in, out(n);
  if (pre_norm) {
    in.assign(x, x + n);
    norm(in.data());
    f(in.data(), out.data());
  } else {
    f(x, out.data());
  }
  for (size_t i = 0; i < n; ++i) x[i] += out[i];
  if (!pre_norm) norm(x);
}

// x (rows, d) = √d · table[ids] + sinusoids[position(row)], sinusoids (kMaxPositions, d).
void embed(const float* table, const int32_t* ids, const int64_t* positions, int64_t rows, int64_t vocab, int64_t d,
           const float* sinusoids, float* x) {
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(d)));
  for (int64_t r = 0; r < rows; ++r) {
    PILLARS_CHECK(ids[r] >= 0 && ids[r] < vocab, "decoder: token id ", ids[r], " outside the vocabulary of ", vocab);
    PILLARS_CHECK(positions[r] < kMaxPositions, "decoder: position ", positions[r], " beyond the supported ", kMaxPositions);
    const float* e = table + static_cast<int64_t>(ids[r]) * d;
    const float* p = sinusoids + positions[r] * d;
    for (int64_t j = 0; j < d; ++j) x[r * d + j] = scale * e[j] + p[j];
  }
}

} // namespace

EncoderOutput IncrementalDecoder::encode(const std::vector<std::vector<int32_t>>& src) const {
  const int64_t d = cfg_.d_model, Dh = cfg_.head_dim();
  EncoderOutput enc;
  enc.B = static_cast<int64_t>(src.size());
  for (const auto& s : src) {
    PILLARS_CHECK(!s.empty(), "decoder: an empty source sentence (it must end with eos at least)");
    enc.Ts = std::max<int64_t>(enc.Ts, static_cast<int64_t>(s.size()));
    enc.lengths.push_back(static_cast<int32_t>(s.size()));
  }
  const int64_t B = enc.B, Ts = enc.Ts, rows = B * Ts;
  std::vector<int32_t> ids(static_cast<size_t>(rows), static_cast<int32_t>(cfg_.pad_id));
  std::vector<int64_t> positions(static_cast<size_t>(rows));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Ts; ++t) {
      if (t < enc.lengths[b]) ids[b * Ts + t] = src[b][t];
      positions[b * Ts + t] = t;
    }
  enc.out.resize(static_cast<size_t>(rows * d));
  float* x = enc.out.data();
  embed(encoder_table_, ids.data(), positions.data(), rows, cfg_.vocab, d, positions_.data<float>(), x);

  auto norm_fn = [&](const Norm& n) { return [&, n](float* y) { layer_norm(n, y, rows); }; };
  for (const EncoderLayer& L : encoder_) {
    const int64_t H = L.self_attn.heads, HD = H * Dh;
    residual(cfg_.pre_norm, norm_fn(L.self_norm), x, rows, d, [&](const float* in, float* out) {
      std::vector<float> q(rows * HD), k(rows * HD), v(rows * HD), o(rows * HD), lse(B * H * Ts);
      apply(L.self_attn.q, in, q.data(), rows);
      apply(L.self_attn.k, in, k.data(), rows);
      apply(L.self_attn.v, in, v.data(), rows);
      cpu::AttentionParams p = cpu::attention_params_contiguous(B, H, Ts, Ts, Dh);
      p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
      p.key_lengths = enc.lengths.data();
      cpu::attention_forward(p, q.data(), k.data(), v.data(), o.data(), lse.data(), nullptr);
      apply(L.self_attn.o, o.data(), out, rows);
    });
    residual(cfg_.pre_norm, norm_fn(L.final_norm), x, rows, d, [&](const float* in, float* out) {
      std::vector<float> h(rows * L.fc1.out);
      apply(L.fc1, in, h.data(), rows);
      activation(h.data(), static_cast<int64_t>(h.size()));
      apply(L.fc2, h.data(), out, rows);
    });
  }
  if (cfg_.pre_norm) layer_norm(encoder_final_, x, rows);
  return enc;
}

DecoderState IncrementalDecoder::start(const EncoderOutput& enc, int64_t rows_per_sentence, int64_t max_steps) const {
  PILLARS_CHECK(rows_per_sentence >= 1 && max_steps >= 1, "decoder: rows_per_sentence and max_steps must be >= 1");
  PILLARS_CHECK(max_steps <= kMaxPositions, "decoder: ", max_steps, " steps beyond the supported ", kMaxPositions);
  const int64_t Dh = cfg_.head_dim();
  DecoderState st;
  st.rows_per_sentence = rows_per_sentence;
  st.N = enc.B * rows_per_sentence, st.Ts = enc.Ts, st.T = max_steps;
  for (int64_t n = 0; n < st.N; ++n) st.src_lengths.push_back(enc.lengths[n / rows_per_sentence]);
  const int64_t src_rows = enc.B * enc.Ts;
  for (const DecoderLayer& L : decoder_) {
    const int64_t HD = L.cross_attn.heads * Dh;
    // Keys and values of the encoder output, once per sentence, then copied to each of its rows.
    std::vector<float> k(src_rows * HD), v(src_rows * HD);
    apply(L.cross_attn.k, enc.out.data(), k.data(), src_rows);
    apply(L.cross_attn.v, enc.out.data(), v.data(), src_rows);
    std::vector<float> ck(st.N * st.Ts * HD), cv(st.N * st.Ts * HD);
    const int64_t per_sentence = st.Ts * HD;
    for (int64_t n = 0; n < st.N; ++n) {
      const int64_t b = n / rows_per_sentence;
      std::memcpy(ck.data() + n * per_sentence, k.data() + b * per_sentence, sizeof(float) * per_sentence);
      std::memcpy(cv.data() + n * per_sentence, v.data() + b * per_sentence, sizeof(float) * per_sentence);
    }
    st.cross_k.push_back(std::move(ck));
    st.cross_v.push_back(std::move(cv));
    const int64_t self_hd = L.self_attn.heads * Dh;
    st.self_k.emplace_back(static_cast<size_t>(st.N * st.T * self_hd));
    st.self_v.emplace_back(static_cast<size_t>(st.N * st.T * self_hd));
  }
  return st;
}

void IncrementalDecoder::step(DecoderState& st, const int32_t* tokens, float* logprobs) const {
  PILLARS_CHECK(st.step < st.T, "decoder: step ", st.step, " beyond max_steps ", st.T);
  const int64_t d = cfg_.d_model, Dh = cfg_.head_dim(), N = st.N, t = st.step, V = cfg_.vocab;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  std::vector<float> y(static_cast<size_t>(N * d));
  const std::vector<int64_t> positions(static_cast<size_t>(N), t);
  embed(decoder_table_, tokens, positions.data(), N, V, d, positions_.data<float>(), y.data());
  const std::vector<int32_t> seen(static_cast<size_t>(N), static_cast<int32_t>(t + 1)); // keys 0..t

  auto norm_fn = [&](const Norm& n) { return [&, n](float* x) { layer_norm(n, x, N); }; };
  for (size_t l = 0; l < decoder_.size(); ++l) {
    const DecoderLayer& L = decoder_[l];
    // Self-attention over this row's own steps 0..t (its cache), no mask needed beyond the length.
    residual(cfg_.pre_norm, norm_fn(L.self_norm), y.data(), N, d, [&](const float* in, float* out) {
      const int64_t H = L.self_attn.heads, HD = H * Dh;
      std::vector<float> q(N * HD), k(N * HD), v(N * HD), o(N * HD), lse(N * H);
      apply(L.self_attn.q, in, q.data(), N);
      apply(L.self_attn.k, in, k.data(), N);
      apply(L.self_attn.v, in, v.data(), N);
      float* cache_k = st.self_k[l].data();
      float* cache_v = st.self_v[l].data();
      for (int64_t n = 0; n < N; ++n) {
        std::memcpy(cache_k + (n * st.T + t) * HD, k.data() + n * HD, sizeof(float) * HD);
        std::memcpy(cache_v + (n * st.T + t) * HD, v.data() + n * HD, sizeof(float) * HD);
      }
      cpu::AttentionParams p = cpu::attention_params_contiguous(N, H, 1, st.T, Dh);
      p.scale = scale;
      p.key_lengths = seen.data();
      p.k_batch_stride = p.v_batch_stride = st.T * HD;
      cpu::attention_forward(p, q.data(), cache_k, cache_v, o.data(), lse.data(), nullptr);
      apply(L.self_attn.o, o.data(), out, N);
    });
    // Cross-attention over the row's sentence (keys past its source length are masked).
    residual(cfg_.pre_norm, norm_fn(L.cross_norm), y.data(), N, d, [&](const float* in, float* out) {
      const int64_t H = L.cross_attn.heads, HD = H * Dh;
      std::vector<float> q(N * HD), o(N * HD), lse(N * H);
      apply(L.cross_attn.q, in, q.data(), N);
      cpu::AttentionParams p = cpu::attention_params_contiguous(N, H, 1, st.Ts, Dh);
      p.scale = scale;
      p.key_lengths = st.src_lengths.data();
      cpu::attention_forward(p, q.data(), st.cross_k[l].data(), st.cross_v[l].data(), o.data(), lse.data(), nullptr);
      apply(L.cross_attn.o, o.data(), out, N);
    });
    residual(cfg_.pre_norm, norm_fn(L.final_norm), y.data(), N, d, [&](const float* in, float* out) {
      std::vector<float> h(N * L.fc1.out);
      apply(L.fc1, in, h.data(), N);
      activation(h.data(), static_cast<int64_t>(h.size()));
      apply(L.fc2, h.data(), out, N);
    });
  }
  if (cfg_.pre_norm) layer_norm(decoder_final_, y.data(), N);
  // logprobs (N, V) = log_softmax(y Eᵀ)   (the softmax kernel reads its input twice: not in place)
  std::vector<float> logits(static_cast<size_t>(N * V));
  cpu::sgemm(false, true, N, V, d, 1.0f, y.data(), d, output_matrix_, d, 0.0f, logits.data(), V);
  cpu::softmax_forward(cpu::SoftmaxShape{N, V, 1}, logits.data(), logprobs, /*log=*/true);
  ++st.step;
}

void IncrementalDecoder::reorder(DecoderState& st, const std::vector<int32_t>& origin) const {
  PILLARS_CHECK(static_cast<int64_t>(origin.size()) == st.N, "decoder: reorder got ", origin.size(), " rows, state has ",
                st.N);
  for (int64_t n = 0; n < st.N; ++n)
    PILLARS_CHECK(origin[n] >= 0 && origin[n] < st.N && origin[n] / st.rows_per_sentence == n / st.rows_per_sentence,
                  "decoder: reorder moves row ", origin[n], " to row ", n, " of another sentence");
  bool identity = true;
  for (int64_t n = 0; n < st.N; ++n) identity = identity && origin[n] == n;
  if (identity) return;
  for (size_t l = 0; l < decoder_.size(); ++l) {
    for (std::vector<float>* cache : {&st.self_k[l], &st.self_v[l]}) {
      const int64_t row = static_cast<int64_t>(cache->size()) / st.N; // T · HD
      const int64_t used = row / st.T * st.step;                      // the steps written so far
      st.scratch.resize(cache->size());
      for (int64_t n = 0; n < st.N; ++n)
        std::memcpy(st.scratch.data() + n * row, cache->data() + origin[n] * row, sizeof(float) * used);
      cache->swap(st.scratch);
    }
  }
}

// ---- the old beam search ----


namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Row {                       // one live hypothesis (a decoder row)
  std::vector<int32_t> tokens;     // generated so far (no leading eos)
  std::vector<float> positional;   // log p of each
  float score = kNegInf;           // cumulative log-probability; −inf = no hypothesis here
};

struct Candidate {
  float score;  // cumulative log-probability after the extension
  int32_t row;  // the row it extends (index within the sentence)
  int32_t token;
  // Best first; ties go to the lower row, then the lower token id (deterministic).
  bool operator<(const Candidate& o) const {
    if (score != o.score) return score > o.score;
    if (row != o.row) return row < o.row;
    return token < o.token;
  }
};

} // namespace

std::vector<std::vector<decode::Hypothesis>> beam_search(const IncrementalDecoder& decoder,
                                                         const std::vector<std::vector<int32_t>>& sources,
                                                         const decode::SearchOptions& o) {
  PILLARS_CHECK(o.beam >= 1, "beam_search: beam must be >= 1, got ", o.beam);
  const int64_t B = static_cast<int64_t>(sources.size()), k = o.beam, N = B * k, V = decoder.config().vocab;
  std::vector<std::vector<decode::Hypothesis>> finished(static_cast<size_t>(B));
  if (B == 0) return finished;

  std::vector<int64_t> max_len(static_cast<size_t>(B));
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const double len = std::floor(o.max_len_a * static_cast<double>(sources[b].size()) + static_cast<double>(o.max_len_b));
    max_len[b] = std::clamp<int64_t>(static_cast<int64_t>(len), 1, o.max_len_cap);
    longest = std::max(longest, max_len[b]);
  }

  const EncoderOutput enc = decoder.encode(sources);
  DecoderState st = decoder.start(enc, k, longest + 1); // steps 0 … max_len (the last one forces eos)
  std::vector<Row> rows(static_cast<size_t>(N));
  for (int64_t b = 0; b < B; ++b) rows[b * k].score = 0.0f; // step 0 extends one row per sentence
  std::vector<bool> done(static_cast<size_t>(B), false);
  std::vector<int32_t> input(static_cast<size_t>(N), static_cast<int32_t>(o.eos)), origin(static_cast<size_t>(N));
  std::vector<float> logprobs(static_cast<size_t>(N * V));
  std::vector<Candidate> cands;

  for (int64_t step = 0; step <= longest; ++step) {
    decoder.step(st, input.data(), logprobs.data());
    std::vector<Row> next(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) origin[n] = static_cast<int32_t>(n);
    for (int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      // The 2k best extensions over the sentence's k rows × V tokens.
      cands.clear();
      for (int64_t r = 0; r < k; ++r) {
        const Row& row = rows[b * k + r];
        if (row.score == kNegInf) continue;
        float* lp = logprobs.data() + (b * k + r) * V;
        lp[o.pad] = kNegInf;
        if (o.bos != o.eos) lp[o.bos] = kNegInf;
        if (step < o.min_len) lp[o.eos] = kNegInf;
        if (step >= max_len[b]) // only eos may follow the longest allowed hypothesis
          for (int64_t v = 0; v < V; ++v) if (v != o.eos) lp[v] = kNegInf;
        for (int64_t v = 0; v < V; ++v) // (a NaN fails the test too: it never becomes a candidate)
          if (lp[v] > kNegInf) cands.push_back({row.score + lp[v], static_cast<int32_t>(r), static_cast<int32_t>(v)});
      }
      const size_t keep = std::min<size_t>(cands.size(), static_cast<size_t>(2 * k));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(keep), cands.end());
      int64_t live = 0;
      for (size_t i = 0; i < keep; ++i) {
        const Candidate& c = cands[i];
        const Row& from = rows[b * k + c.row];
        if (c.token == o.eos) {
          // Only eos among the k best finishes a hypothesis (as in fairseq).
          if (i < static_cast<size_t>(k) && static_cast<int64_t>(finished[b].size()) < k) {
            decode::Hypothesis h;
            h.tokens = from.tokens;
            h.tokens.push_back(c.token);
            h.positional_scores = from.positional;
            h.positional_scores.push_back(c.score - from.score);
            h.score = c.score / std::pow(static_cast<float>(h.tokens.size()), o.lenpen);
            finished[b].push_back(std::move(h));
          }
          continue;
        }
        if (live == k) continue;
        Row& to = next[b * k + live];
        to.tokens = from.tokens;
        to.tokens.push_back(c.token);
        to.positional = from.positional;
        to.positional.push_back(c.score - from.score);
        to.score = c.score;
        origin[b * k + live] = static_cast<int32_t>(b * k + c.row);
        ++live;
      }
      if (static_cast<int64_t>(finished[b].size()) >= k || live == 0 || step >= max_len[b]) done[b] = true;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    rows.swap(next);
    decoder.reorder(st, origin);
    for (int64_t n = 0; n < N; ++n)
      input[n] = rows[n].tokens.empty() ? static_cast<int32_t>(o.eos) : rows[n].tokens.back();
  }

  for (auto& hyps : finished) {
    PILLARS_CHECK(!hyps.empty(), "beam_search: a sentence finished without a hypothesis");
    std::stable_sort(hyps.begin(), hyps.end(), [](const decode::Hypothesis& a, const decode::Hypothesis& b) { return a.score > b.score; });
  }
  return finished;
}

} // namespace pillars::bench::legacy
