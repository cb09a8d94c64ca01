// Data-parallel training: what the trainer does differently when a launcher started several
// processes (engine/dist/communicator.h). One update of N ranks with update_freq u is the update
// of one process with update_freq N·u, computed in N pieces:
//
//   the update's batches    j = 0 … N·u−1 of the epoch's order (the same order on every rank: a
//                           function of the seed and the epoch), dealt by tokens: the largest
//                           batch first, each to the rank with the fewest tokens so far, so every
//                           rank does about the same work (batches are cut to about
//                           data.max_tokens tokens, padding included, but a length bucket's last
//                           batch may be small). Batch j's dropout seed is a function of
//                           (seed, update, j) wherever it runs.
//   each rank               acc_r = Σ_{its j} tokens_j · ∇L_j      (tokens_j: batch j's target tokens)
//   the all-reduce          acc   = Σ_r acc_r,   T = Σ_r Σ_{its j} tokens_j   (in buckets, started
//                           while the backward still runs: train/gradient_buckets.h)
//   every rank              ∇ = acc / T: the gradient of the mean loss over all the update's target
//                           tokens, as one process accumulating the same batches computes it;
//                           then the same clipping and optimizer step on the same parameters
//                           (under ZeRO-1 each rank steps its share and sends it to the others).
//
// GHT in a job. The method's losses (GCT, the baselines' regularizers) and the HUDS grouping they
// use act on each batch, as in one process: a rank computes them on its own batches, and their
// gradients are summed with the rest. The heads' feature maps are never exchanged.
//
// The copies of the parameters never diverge: every rank applies the same step to the same values.
// Against one process with N·u batches an update, only the order of the sums can differ. With
// u = 1 and two ranks it does not (a + b = b + a): the parameters are the same bit for bit. With
// u > 1 each rank first adds its own batches, another grouping, and rounding moves the parameters
// apart a little (tests/cli_data_parallel.sh states the tolerance and why).
//
// One voice: rank 0 alone writes the run directory (log.jsonl, checkpoints, evaluation) and
// prints progress, and it alone validates; what validation decides (best score, patience, stop)
// reaches the other ranks with the trainer state. A stop (a signal, or max_minutes by rank 0's
// clock) is agreed by all ranks before every update, so all stop after the same one, and none
// leaves before rank 0 has saved.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/optim/optimizer.h"
#include "train/checkpoint.h"

namespace pillars::train {

// The indices j of the update's batches that `rank` of `size` trains, ascending. tokens[j]: batch j's
// size in tokens, padding included (the work it takes). Dealt largest first (ties: the lower j) to
// the rank with the fewest tokens so far (ties: the lower rank); the same answer on every rank.
std::vector<int64_t> batches_of_rank(const std::vector<int64_t>& tokens, int rank, int size);

// ZeRO-1: the whole optimizer state, assembled at rank 0 into `whole` (a fresh optimizer of the same
// kind) from every rank's entries of the parameters it owns (`owns`), so a checkpoint holds all of
// it whatever the world size. A collective: every rank calls it; only rank 0's `whole` changes.
void gather_optimizer_state(dist::Communicator& comm, const optim::Optimizer& mine,
                            const std::function<bool(const std::string& param)>& owns, optim::Optimizer& whole);

// Rank 0's state, copied to every rank (as its JSON, the form checkpoints store).
void share_state(dist::Communicator& comm, TrainerState& state);

} // namespace pillars::train
