// Voting-to-Stay (docs/METHOD.md §5): which heads of each module stay.
//
// The vote runs the frozen model forward (no dropout) over training batches. Its steps' pass
// v2s_vote names each module's Gram matrix of the chosen feature map "v2s.gram.<module>"; after
// every batch a VoteTally reads them, runs HUDS (K-means, C groups) on each, and gives one vote to
// the member of each group nearest the group's centroid:
//
//   votes_i   += [i = group_votes(G, labels)[c(i)]]                     (the nearest member, ties below)
//   score_i   += cos(e_i, μ_c(i))                                       (footnote 5's continuous score)
//   M_ij      += [c(i) = c(j)]                                          (co-assignment counts)
//
// Ties. The two members of a group of two are always exactly as far from their centroid (μ is their
// midpoint: ‖e_a − μ‖ = ‖e_b − μ‖ = ‖e_a − e_b‖/2), in every feature map, so the distance cannot
// choose between them and the rounding of G would. group_votes compares members by
//   1. the squared distance d_i = ‖e_i − μ_c‖², equal when |d_a − d_b| ≤ kVoteTieTolerance ·
//      max(G_aa, G_bb) (G is f32: about 1e-7 of the squared norms is all it resolves);
//   2. then the higher cos(e_i, μ_c), equal within kVoteTieTolerance (for a pair with cosine c
//      between them, cos_a − cos_b ∝ (‖e_a‖ − ‖e_b‖)(1 − c): the member carrying more of the
//      group's signal, whose direction the centroid leans to);
//   3. then the lower head index.
// Members are scanned in index order, each replacing the current choice only when strictly better
// by this rule. (The other feature maps were considered: over the same two heads they tie as well,
// and A would need the attention probabilities materialized in the voting pass.)
//
// Decision rules (`KeepRule`), per module:
//   per_group      the paper's: K-means labels are arbitrary per batch, so the final C groups are
//                  formed from the co-assignment matrix M (K-means on its rows, seeded), and each
//                  group keeps its most-voted member (ties: higher score, then lower index);
//   top_c          the reference code's: the `keep` heads with the most votes (ties: score, index);
//   score          the `keep` heads with the highest continuous score;
//   random         `keep` heads drawn at random (the ablation "w/o HUDS": heads switched off at random);
//   random_member  the per_group groups, each keeping a random member (the ablation "w/o PS stay").
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/dist/communicator.h"
#include "ght/feature_maps.h"
#include "ght/prune.h"
#include "steps/steps.h"
#include "steps/task.h"

namespace pillars::ght {

// KeepRule (per_group, top_c, score, random, random_member): ght/settings.h.

// The relative tolerance of the vote's ties (above): distances relative to the members' squared
// norms, cosines absolute.
constexpr double kVoteTieTolerance = 1e-6;

// One batch's vote in one module: for each of the C groups of `labels` (H), the member nearest the
// group's centroid, ties broken as above (−1 for a group without members). G is (H, H).
std::vector<int> group_votes(const std::vector<double>& G, int H, const std::vector<int>& labels, int C);

struct VoteSettings {
  FeatureMap feature_map = FeatureMap::V;
  int groups = 2; // C
  KeepRule rule = KeepRule::per_group;
  int keep = 0;            // heads kept per module by top_c / score / random (0 = groups)
  uint64_t seed = 1;       // K-means initializations and the random rules
  int64_t max_batches = 0; // training batches to vote on (0 = the whole training set)
};

// The tallies of one module.
struct ModuleVotes {
  std::string module;
  int heads = 0;
  std::vector<int64_t> votes;       // (H)
  std::vector<double> score;        // (H) Σ cos(e_i, μ_c(i))
  std::vector<int64_t> co_assigned; // (H, H) M_ij
  std::vector<int> groups;          // (H) the final groups (per_group, random_member; else HUDS of M too)
  std::vector<int> kept;            // ascending
};

struct VoteResult {
  VoteSettings settings;
  int64_t batches = 0;
  std::vector<ModuleVotes> modules; // graph order
  HeadSelection selection() const;
  nlohmann::json to_json() const; // votes.json
};

// The pass of the vote's forward-only steps: names G_m (H, H) of every module m "v2s.gram.<module>".
void v2s_vote(steps::StepGraph& step, FeatureMap feature_map);
std::string vote_gram_name(const std::string& module); // "v2s.gram.<module>"

// Collects the tallies from the vote's runs: add(run) after each batch, then decide().
class VoteTally {
 public:
  explicit VoteTally(VoteSettings s) : s_(s) {}
  // One batch: HUDS and the vote on each module's named Gram matrix.
  void add(const steps::StepRun& run);
  VoteResult decide() const;

  // In a data-parallel job each rank votes on the batches j ≡ rank (mod size) of the fixed order
  // (TrainingTask::train_nll), seeding batch j's K-means by j as one process would, and then
  // sum_tallies() adds the ranks' tallies: the votes, co-assignments and batch count exactly, the
  // scores in double (their order of addition differs, which can only matter for an exact tie of
  // votes, broken by score).
  void share_batches(int rank, int size) { rank_ = rank, size_ = size; }
  void sum_tallies(dist::Communicator& comm);

  // One batch's HUDS + vote on one module's Gram matrix (H, H), exposed for tests.
  void tally(ModuleVotes& m, const std::vector<double>& gram, uint64_t seed) const;

 private:
  VoteSettings s_;
  std::vector<ModuleVotes> tallies_;
  int64_t batches_ = 0;     // batches tallied (by this rank, until sum_tallies)
  int rank_ = 0, size_ = 1; // share_batches
};

// The whole vote: make_task builds the training task of the frozen model whose evaluation steps run
// v2s_vote (the caller knows the data: train/head_phases.cpp); returns the decision. Prints progress unless quiet. In a
// data-parallel job (comm of several ranks) the ranks share the batches and every rank returns the
// decision one process voting on all of them would make.
using VoteTaskFactory = std::function<std::unique_ptr<steps::TrainingTask>()>;
VoteResult vote(const VoteTaskFactory& make_task, const VoteSettings& settings, bool quiet,
                dist::Communicator& comm = dist::single_process());

} // namespace pillars::ght
