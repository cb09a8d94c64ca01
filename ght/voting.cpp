// See voting.h.
#include "ght/voting.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "base/splitmix64.h"
#include "ght/kmeans.h"

namespace pillars::ght {

namespace {

// Heads ranked best first by (primary, secondary) descending, then index ascending.
std::vector<int> ranked(const std::vector<double>& primary, const std::vector<double>& secondary) {
  std::vector<int> order(primary.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (primary[a] != primary[b]) return primary[a] > primary[b];
    return secondary[a] > secondary[b];
  });
  return order;
}

std::vector<double> as_double(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// Uniform draws without replacement: `n` of `from`, ascending.
std::vector<int> random_subset(std::vector<int> from, int n, uint64_t seed) {
  for (size_t i = from.size(); i > 1; --i) {
    seed = mix_seeds(seed, i);
    std::swap(from[i - 1], from[seed % i]);
  }
  from.resize(static_cast<size_t>(std::min<int>(n, static_cast<int>(from.size()))));
  std::sort(from.begin(), from.end());
  return from;
}

// The final groups of a module from its co-assignment counts: K-means on the rows of M / batches.
std::vector<int> groups_from_co_assignment(const ModuleVotes& m, int C, int64_t batches, uint64_t seed) {
  std::vector<std::vector<double>> rows(static_cast<size_t>(m.heads));
  for (int i = 0; i < m.heads; ++i)
    for (int j = 0; j < m.heads; ++j)
      rows[i].push_back(static_cast<double>(m.co_assigned[i * m.heads + j]) /
                        static_cast<double>(std::max<int64_t>(batches, 1)));
  return kmeans_vectors(rows, std::min(C, m.heads), seed).labels;
}

} // namespace

HeadSelection VoteResult::selection() const {
  HeadSelection s;
  for (const ModuleVotes& m : modules) s[m.module] = m.kept;
  return s;
}

nlohmann::json VoteResult::to_json() const {
  nlohmann::json mods = nlohmann::json::array();
  for (const ModuleVotes& m : modules) {
    std::vector<std::vector<int64_t>> co(static_cast<size_t>(m.heads));
    for (int i = 0; i < m.heads; ++i)
      co[i].assign(m.co_assigned.begin() + i * m.heads, m.co_assigned.begin() + (i + 1) * m.heads);
    mods.push_back({{"module", m.module},
                    {"heads", m.heads},
                    {"votes", m.votes},
                    {"score", m.score},
                    {"co_assignment", co},
                    {"groups", m.groups},
                    {"kept", m.kept}});
  }
  return {{"rule", enum_name(settings.rule)},
          {"feature_map", enum_name(settings.feature_map)},
          {"groups", settings.groups},
          {"keep", settings.keep},
          {"seed", settings.seed},
          {"batches", batches},
          {"modules", mods}};
}

std::string vote_gram_name(const std::string& module) { return "v2s.gram." + module; }

void v2s_vote(steps::StepGraph& step, FeatureMap feature_map) {
  for (const AttentionSite& site : step.attention)
    step.name(vote_gram_name(site.module), feature_gram(step.graph, site, feature_map)); // G_m (H, H)
}

std::vector<int> group_votes(const std::vector<double>& G, int H, const std::vector<int>& labels, int C) {
  const std::vector<double> dist = distance_to_centroids(G, H, labels, C); // (H, C) ‖e_i − μ_c‖²
  const std::vector<double> cos = cosine_to_centroids(G, H, labels, C);    // (H, C) cos(e_i, μ_c)
  // Is head a a better representative of group g than head b, the current choice (b < a)? Distance,
  // then cosine, then the lower index.
  const auto better = [&](int a, int b, int g) {
    const double da = dist[a * C + g], db = dist[b * C + g];
    if (std::fabs(da - db) > kVoteTieTolerance * std::max(G[a * H + a], G[b * H + b])) return da < db;
    const double ca = cos[a * C + g], cb = cos[b * C + g];
    if (std::fabs(ca - cb) > kVoteTieTolerance) return ca > cb;
    return false; // b has the lower index
  };
  std::vector<int> nearest(static_cast<size_t>(C), -1);
  for (int i = 0; i < H; ++i) {
    const int g = labels[i];
    if (nearest[g] < 0 || better(i, nearest[g], g)) nearest[g] = i;
  }
  return nearest;
}

void VoteTally::tally(ModuleVotes& m, const std::vector<double>& gram, uint64_t seed) const {
  const int H = m.heads, C = std::min(s_.groups, H);
  const Clustering c = kmeans_gram(gram, H, C, seed);
  const std::vector<double> cos = cosine_to_centroids(gram, H, c.labels, C); // (H, C)
  for (int i = 0; i < H; ++i) {
    const int g = c.labels[i];
    m.score[i] += cos[i * C + g];
    for (int j = 0; j < H; ++j) m.co_assigned[i * H + j] += c.labels[j] == g;
  }
  for (const int nearest : group_votes(gram, H, c.labels, C))
    if (nearest >= 0) ++m.votes[nearest];
}

void VoteTally::add(const steps::StepRun& run) {
  if (run.info.train) return;
  const std::vector<AttentionSite>& sites = run.step.attention;
  if (tallies_.empty())
    for (const AttentionSite& site : sites) {
      ModuleVotes v;
      v.module = site.module, v.heads = static_cast<int>(site.heads);
      v.votes.assign(v.heads, 0), v.score.assign(v.heads, 0.0), v.co_assigned.assign(v.heads * v.heads, 0);
      tallies_.push_back(std::move(v));
    }
  for (size_t m = 0; m < sites.size(); ++m) {
    const Tensor G = run.named(vote_gram_name(sites[m].module));
    const std::vector<double> gram(G.data<float>(), G.data<float>() + G.numel());
    const int64_t batch = rank_ + batches_ * size_; // its index in the fixed order of the training batches
    tally(tallies_[m], gram, mix_seeds(mix_seeds(s_.seed, static_cast<uint64_t>(batch)), m));
  }
  ++batches_;
}

void VoteTally::sum_tallies(dist::Communicator& comm) {
  if (comm.size() == 1) return;
  int64_t modules = static_cast<int64_t>(tallies_.size()), fewest = modules;
  comm.all_reduce_max(&modules, 1);
  fewest = -fewest, comm.all_reduce_max(&fewest, 1), fewest = -fewest;
  if (modules != fewest)
    throw InputError(
        "V2S in a data-parallel job: a rank had no batch to vote on (raise prune.vote_batches to at least the number "
        "of ranks)");
  for (ModuleVotes& m : tallies_) {
    comm.all_reduce_sum(m.votes.data(), static_cast<int64_t>(m.votes.size()));
    comm.all_reduce_sum(m.score.data(), static_cast<int64_t>(m.score.size()));
    comm.all_reduce_sum(m.co_assigned.data(), static_cast<int64_t>(m.co_assigned.size()));
  }
  comm.all_reduce_sum(&batches_, 1);
  rank_ = 0, size_ = 1;
}

VoteResult VoteTally::decide() const {
  VoteResult r;
  r.settings = s_, r.batches = batches_, r.modules = tallies_;
  const int keep_default = s_.keep > 0 ? s_.keep : s_.groups;
  for (size_t mi = 0; mi < r.modules.size(); ++mi) {
    ModuleVotes& m = r.modules[mi];
    const uint64_t seed = mix_seeds(mix_seeds(s_.seed, 0xdec1de), mi);
    const int keep = std::min(keep_default, m.heads);
    m.groups = groups_from_co_assignment(m, s_.groups, batches_, seed);
    std::vector<int> all(static_cast<size_t>(m.heads));
    std::iota(all.begin(), all.end(), 0);
    switch (s_.rule) {
      case KeepRule::top_c: {
        const std::vector<int> order = ranked(as_double(m.votes), m.score);
        m.kept.assign(order.begin(), order.begin() + keep);
        break;
      }
      case KeepRule::score: {
        const std::vector<int> order = ranked(m.score, as_double(m.votes));
        m.kept.assign(order.begin(), order.begin() + keep);
        break;
      }
      case KeepRule::random:
        m.kept = random_subset(all, keep, seed);
        break;
      case KeepRule::per_group:
      case KeepRule::random_member: {
        const std::vector<int> order = ranked(as_double(m.votes), m.score);
        const int C = *std::max_element(m.groups.begin(), m.groups.end()) + 1;
        for (int g = 0; g < C; ++g) {
          std::vector<int> members;
          for (int h : order)
            if (m.groups[h] == g) members.push_back(h);
          if (members.empty()) continue;
          m.kept.push_back(s_.rule == KeepRule::per_group ? members.front()
                                                          : random_subset(members, 1, mix_seeds(seed, g)).front());
        }
        break;
      }
    }
    std::sort(m.kept.begin(), m.kept.end());
  }
  return r;
}

VoteResult vote(const VoteTaskFactory& make_task, const VoteSettings& settings, bool quiet, dist::Communicator& comm) {
  VoteTally tally(settings);
  std::unique_ptr<steps::TrainingTask> task = make_task();
  task->steps().set_run_watcher([&tally](const steps::StepRun& run) { tally.add(run); });
  const int64_t total = task->batches_per_epoch();
  const int64_t batches = settings.max_batches > 0 ? std::min(settings.max_batches, total) : total;
  if (!quiet)
    std::fprintf(stderr, "V2S: voting on %lld training batches (feature map %s, %d groups, rule %s)\n",
                 static_cast<long long>(batches), enum_name(settings.feature_map), settings.groups,
                 enum_name(settings.rule));
  tally.share_batches(comm.rank(), comm.size());
  task->train_nll(batches, comm.rank(), comm.size());
  task->steps().set_run_watcher(nullptr);
  tally.sum_tallies(comm);
  VoteResult r = tally.decide();
  if (!quiet)
    for (const ModuleVotes& m : r.modules) {
      std::string votes, kept;
      for (int64_t v : m.votes) votes += str_cat(votes.empty() ? "" : " ", v);
      for (int k : m.kept) kept += str_cat(kept.empty() ? "" : " ", k);
      std::fprintf(stderr, "V2S: %-32s votes [%s] keeps [%s]\n", m.module.c_str(), votes.c_str(), kept.c_str());
    }
  return r;
}

} // namespace pillars::ght
