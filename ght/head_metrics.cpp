// See head_metrics.h. The steps of one measurement:
//   1. build the model's graph for the batch's shape in evaluation mode, asking every attention
//      node for its probabilities A and declaring "tgt_lengths" so that decoder-side padding is known;
//   2. mark each module's q, v, out, probs as graph outputs (the memory plan keeps them to the end);
//   3. run it once; read each module's tensors and lengths from the executor;
//   4. per module: xray(), the feature map's Gram → cosines → K-means → Dunn, Silhouette (both
//      conventions), GCT terms.
#include "ght/head_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "engine/executor.h"
#include "ght/kmeans.h"
#include "kernels/cpu/kmeans.h"

namespace pillars::ght {

namespace {

// ---- running the graph ------------------------------------------------------------------------

// Row lengths of a right-padded (B, T) id matrix: the number of non-pad ids in each row.
std::vector<int32_t> row_lengths(const std::vector<int32_t>& ids, int64_t B, int64_t T, int32_t pad) {
  std::vector<int32_t> lengths(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b)
    lengths[static_cast<size_t>(b)] = static_cast<int32_t>(
        std::count_if(ids.begin() + b * T, ids.begin() + (b + 1) * T, [pad](int32_t id) { return id != pad; }));
  return lengths;
}

GraphOptions evaluation_options() {
  GraphOptions o;
  o.train = false;
  o.attention_probs = true;
  o.target_lengths = true;
  return o;
}

// Keeps the feature maps of every module alive after the run.
void keep_feature_maps(Graph& g, const std::vector<AttentionSite>& sites) {
  for (const AttentionSite& s : sites)
    for (ValueId v : {s.q, s.v, s.out, s.probs}) {
      PILLARS_CHECK(v != kNoValue, "measure_head_metrics: module ", s.module, " did not record q, v, out and probs");
      g.mark_output(v);
    }
}

void bind_i32(Executor& ex, const std::string& name, const std::vector<int32_t>& values, const Shape& shape) {
  ex.bind(name, Tensor::from_i32(shape, values));
}

// The lengths a site recorded, as bound to the executor; a site that recorded none (a graph that
// does not declare target lengths) is on the target side, whose lengths the batch gives.
std::vector<int32_t> site_lengths(const Executor& ex, ValueId lengths, const std::vector<int32_t>& target_lengths) {
  if (lengths == kNoValue) return target_lengths;
  const Tensor t = ex.fetch(lengths);
  const int32_t* p = t.data<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

ModuleTensors module_tensors(const Executor& ex, const AttentionSite& s, const std::vector<int32_t>& target_lengths) {
  ModuleTensors t;
  t.q = ex.fetch(s.q);
  t.v = ex.fetch(s.v);
  t.out = ex.fetch(s.out);
  t.probs = ex.fetch(s.probs);
  t.query_lengths = site_lengths(ex, s.query_lengths, target_lengths);
  t.key_lengths = site_lengths(ex, s.key_lengths, target_lengths);
  t.causal = s.causal;
  return t;
}

HeadMetrics measure_sites(const Executor& ex, const std::vector<AttentionSite>& sites,
                          const std::vector<int32_t>& target_lengths, const HeadMetricsOptions& options) {
  HeadMetrics m;
  m.feature_map = options.feature_map;
  m.groups = options.groups;
  for (const AttentionSite& s : sites)
    m.modules.push_back(measure_module(s.module, module_tensors(ex, s, target_lengths), options));
  return m;
}

// ---- JSON -----------------------------------------------------------------------------------------

nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json vector_json(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}

// An H × H row-major matrix as [[row 0], [row 1], ...].
nlohmann::json matrix_json(const std::vector<double>& M, int64_t H) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < H; ++i)
    rows.push_back(vector_json(std::vector<double>(M.begin() + i * H, M.begin() + (i + 1) * H)));
  return rows;
}

nlohmann::json module_json(const ModuleHeadMetrics& m) {
  const XrayMetrics& x = m.xray;
  const int64_t H = x.heads;
  return {{"module", m.module},
          {"heads", H},
          {"orthogonality", number(x.orthogonality_mean)},
          {"orthogonality_norm", number(x.orthogonality_norm_mean)},
          {"context_nonorth", number(x.context_nonorth_mean)},
          {"context_nonorth_norm", number(x.context_nonorth_norm_mean)},
          {"output_dissimilarity", number(x.output_dissimilarity_mean)},
          {"attention_variance", vector_json(x.attention_variance)},
          {"attention_variance_mean", number(x.attention_variance_mean)},
          {"similarity", matrix_json(m.similarity, H)},
          {"labels", m.labels},
          {"dunn", number(m.dunn)},
          {"silhouette", number(m.silhouette)},
          {"silhouette_ght", number(m.silhouette_ght)},
          {"homogenization", number(m.homogenization)},
          {"diversification", number(m.diversification)},
          {"pairs",
           {{"orthogonality", matrix_json(x.orthogonality, H)},
            {"orthogonality_norm", matrix_json(x.orthogonality_norm, H)},
            {"context_nonorth", matrix_json(x.context_nonorth, H)},
            {"context_nonorth_norm", matrix_json(x.context_nonorth_norm, H)},
            {"output_dissimilarity", matrix_json(x.output_dissimilarity, H)}}}};
}

} // namespace

void read_legacy_keys(nlohmann::json& object) {
  static const char* const kOldNames[] = {"homogenisation", "gct_homogenisation"}; // older files; spelling: kept
  static const char* const kNames[] = {"homogenization", "gct_homogenization"};
  if (!object.is_object()) return;
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (!object.contains(kNames[i]) && object.contains(kOldNames[i])) object[kNames[i]] = object[kOldNames[i]];
}

nlohmann::json to_json(const HeadMetrics& m) {
  nlohmann::json modules = nlohmann::json::array();
  for (const ModuleHeadMetrics& mod : m.modules) modules.push_back(module_json(mod));
  return {{"type", "head_metrics"}, {"update", m.update}, {"epoch", m.epoch}, {"feature_map", enum_name(m.feature_map)},
          {"groups", m.groups},     {"modules", modules}};
}

// ---- one module -------------------------------------------------------------------------------

GroupCosines group_cosines(const std::vector<double>& G, int k, const std::vector<int>& labels, int C) {
  PILLARS_CHECK(static_cast<int>(labels.size()) == k && static_cast<int>(G.size()) == k * k,
                "group_cosines: ", labels.size(), " labels and ", G.size(), " Gram entries for k = ", k);
  // Homogenization: each head's cosine with its own group's centroid.
  const std::vector<double> to_centroids = cosine_to_centroids(G, k, labels, C); // (k, C)
  GroupCosines r;
  cpu::kmeans_mean_at_labels({.k = k, .C = C}, to_centroids.data(), labels.data(), &r.homogenization);

  // Diversification: ⟨μ_a, μ_b⟩ = mean_{i∈a, j∈b} G_ij, so cos(μ_a, μ_b) needs only the group sums
  // S_ab = Σ_{i∈a, j∈b} G_ij and sizes n_a: cos = S_ab / sqrt(S_aa S_bb) (the sizes cancel), averaged
  // over the pairs of groups with members.
  cpu::kmeans_mean_centroid_cosine({.k = k, .C = C}, G.data(), labels.data(), &r.diversification);
  return r;
}

ModuleHeadMetrics measure_module(const std::string& module, const ModuleTensors& t, const HeadMetricsOptions& options) {
  PILLARS_CHECK(options.groups >= 1, "measure_head_metrics: groups must be at least 1, got ", options.groups);
  ModuleHeadMetrics m;
  m.module = module;
  m.xray = xray(t);
  const int k = static_cast<int>(m.xray.heads);
  const int C = std::min(options.groups, k);
  const std::vector<double> G = feature_gram(t, options.feature_map);
  m.similarity = cosine_from_gram(G, k);
  m.labels = kmeans_gram(G, k, C, options.seed).labels;
  m.dunn = dunn_index(G, k, m.labels);
  m.silhouette = silhouette(G, k, m.labels);
  m.silhouette_ght = silhouette_ght(G, k, m.labels);
  const GroupCosines gc = group_cosines(G, k, m.labels, C);
  m.homogenization = gc.homogenization;
  m.diversification = gc.diversification;
  return m;
}

// ---- the whole model ------------------------------------------------------------------------------

HeadMetrics measure_head_metrics(const TransformerConfig& cfg, ParamStore& params, const steps::Seq2SeqBatch& batch,
                                 const HeadMetricsOptions& options) {
  Seq2SeqGraph m = build_seq2seq_training_graph(cfg, batch.B, batch.Ts, batch.Tt, evaluation_options());
  keep_feature_maps(m.graph, m.attention);
  Executor ex(m.graph, params.device()); // where the parameters are: the GPU during a cuda run
  ex.bind_params(params);
  const std::vector<int32_t> tgt_lengths =
      row_lengths(batch.target, batch.B, batch.Tt, static_cast<int32_t>(cfg.pad_id));
  bind_i32(ex, "src_tokens", batch.src_tokens, {batch.B, batch.Ts});
  bind_i32(ex, "src_lengths", batch.src_lengths, {batch.B});
  bind_i32(ex, "prev_output_tokens", batch.prev_output_tokens, {batch.B, batch.Tt});
  bind_i32(ex, "target", batch.target, {batch.B * batch.Tt});
  bind_i32(ex, "tgt_lengths", tgt_lengths, {batch.B});
  ex.run();
  return measure_sites(ex, m.attention, tgt_lengths, options);
}

HeadMetrics measure_head_metrics(const TransformerConfig& cfg, ParamStore& params, const LmBatch& batch,
                                 const HeadMetricsOptions& options) {
  LmGraph m = build_lm_training_graph(cfg, batch.B, batch.T, evaluation_options());
  keep_feature_maps(m.graph, m.attention);
  Executor ex(m.graph, params.device()); // where the parameters are: the GPU during a cuda run
  ex.bind_params(params);
  const std::vector<int32_t> lengths = row_lengths(batch.tokens, batch.B, batch.T, static_cast<int32_t>(cfg.pad_id));
  bind_i32(ex, "tokens", batch.tokens, {batch.B, batch.T});
  bind_i32(ex, "target", batch.target, {batch.B * batch.T});
  if (m.graph.find_input("tgt_lengths") != kNoValue) bind_i32(ex, "tgt_lengths", lengths, {batch.B});
  ex.run();
  return measure_sites(ex, m.attention, lengths, options);
}

// ---- the held-out batch -----------------------------------------------------------------------

steps::Seq2SeqBatch held_out_batch(const std::vector<std::vector<int32_t>>& src,
                                   const std::vector<std::vector<int32_t>>& tgt, int64_t sentences, int32_t pad,
                                   int32_t eos) {
  PILLARS_CHECK(src.size() == tgt.size(), "held_out_batch: ", src.size(), " sources and ", tgt.size(), " targets");
  const int64_t n = std::min<int64_t>(sentences, static_cast<int64_t>(src.size()));
  if (n <= 0) throw InputError("head metrics: the held-out split has no sentence pair");
  steps::Batch b;
  for (int64_t i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.Ts = std::max<int64_t>(b.Ts, static_cast<int64_t>(src[static_cast<size_t>(i)].size()));
    b.Tt = std::max<int64_t>(b.Tt, static_cast<int64_t>(tgt[static_cast<size_t>(i)].size()));
  }
  return steps::make_seq2seq_batch(src, tgt, b, pad, eos);
}

steps::Seq2SeqBatch held_out_batch(const steps::Seq2SeqData& data, int64_t sentences, int32_t pad, int32_t eos) {
  return held_out_batch(data.valid_src, data.valid_tgt, sentences, pad, eos);
}

LmBatch held_out_lm_batch(const std::vector<int32_t>& stream, int64_t block_size, int64_t blocks, int32_t pad) {
  PILLARS_CHECK(block_size > 0, "held_out_lm_batch: block_size must be positive, got ", block_size);
  const int64_t n = std::min(blocks, steps::lm_blocks(stream, block_size));
  if (n <= 0) throw InputError("head metrics: the held-out stream has no block of tokens");
  steps::Batch b;
  for (int64_t i = 0; i < n; ++i) b.indices.push_back(i);
  b.Tt = block_size;
  LmBatch batch;
  batch.B = n, batch.T = block_size;
  steps::make_lm_batch(stream, b, pad, batch.tokens, batch.target);
  return batch;
}

LmBatch held_out_batch(const steps::LmData& data, int64_t block_size, int64_t blocks, int32_t pad) {
  return held_out_lm_batch(data.valid, block_size, blocks, pad);
}

} // namespace pillars::ght
