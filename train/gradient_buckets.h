// Gradient buckets: how the ranks of a data-parallel job sum their gradients while the backward is
// still running, and how ZeRO-1 shares out the optimizer between them. One process that
// accumulates several batches per update (train.update_freq > 1) uses them too, as a job of one
// rank: the accumulation is the same, and the sum over one rank is the bucket itself.
//
// LAYOUT. The gradients are laid out back to front (the last parameter first, since the backward
// finishes the last layers first) in flat f32 buckets of about parallel.bucket_mb each (PyTorch
// DDP's design; 25 MB by default); a parameter larger than that is a bucket of its own. Each
// parameter's accumulator is a view into its bucket:
//
//   bucket 0: [ decoder.out_proj.bias | decoder.out_proj.weight | … ]   bucket 1: [ … ]   …
//
// ACCUMULATION. A rank trains its batches j of the update one after the other (train/
// data_parallel.h). The steps report each gradient as soon as the node that makes it final has run
// (steps/steps.h, GradientObserver), and it is added into its accumulator at once:
//
//   acc_p  = tokens_j · ∇_p L_j        (the rank's first batch of the update)
//   acc_p += tokens_j · ∇_p L_j        (its next ones)
//
// SUMS DURING THE BACKWARD. In the rank's last batch of the update, a bucket whose every gradient
// is in starts its sum over the ranks at once (MPI_Iallreduce), and the backward goes on computing
// the earlier layers' gradients. Sums start in bucket order — a bucket waits for the ones before
// it — because MPI and NCCL both need every rank to start its collectives in the same order, and
// ranks that train batches of other shapes run other compiled graphs. After every node, MPI gets a chance to move the messages along
// (Communicator::test). finish() waits for the sums still in flight. With parallel.overlap off,
// every bucket is summed after the backward (the baseline `pillars bench step` compares with).
//
// ZeRO-1 (parallel.zero_stage 1). Each bucket has an owner rank (buckets dealt largest first to the
// least loaded rank). A bucket's sum goes to its owner only (MPI_Ireduce, half the traffic of an
// all-reduce); the owner alone keeps the optimizer state of the bucket's parameters and updates
// them, then sends the new values to every rank (share_parameters: a broadcast per bucket, which
// together make ZeRO's all-gather). Clipping needs the norm of the whole summed gradient: each
// owner computes the squared norms of its parameters and the ranks add them (clip_grad_norm).
//
// Every rank's parameters stay identical: the same summed gradient (stage 0) or the owner's update
// (stage 1) reaches all of them, bit for bit.
//
// ON THE GPU (train.device "cuda", one GPU per rank). The buckets live in device memory and the
// sums are NCCL's (engine/dist/device_sums.h); the host only queues work and never waits. In the
// batches that only accumulate, the step runs as it does alone (replayed as one CUDA graph) and its
// gradients are added in behind it. In the rank's last batch of the update (with parallel.overlap
// on) the step is queued node by node instead (during_backward_on_gpu), each gradient's
// accumulation is queued right behind the node that makes it, and a full bucket's sum starts on
// NCCL's communication stream once the backend's stream gets there, running beside the rest of the
// backward (runtime/nccl.h draws the two streams); finish() makes the backend's stream wait
// for the sums. With parallel.overlap off the sums are queued on the backend's stream after the
// step.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/dist/device_sums.h"
#include "engine/optim/optimizer.h"
#include "engine/params.h"
#include "steps/steps.h"

namespace pillars::train {

class GradientBuckets final : public steps::GradientObserver {
 public:
  // bucket_mb: the size a bucket fills up to; zero_stage 0 or 1; overlap: sum during the backward.
  // device_sums: NCCL, when the parameters are on the GPU (required then); comm sums host buffers.
  GradientBuckets(dist::Communicator& comm, ParamStore& params, double bucket_mb, int zero_stage, bool overlap,
                  dist::DeviceSums* device_sums = nullptr);

  // Before each of this rank's batches of an update: is it the rank's first (acc = instead of +=)
  // and its last (the sums start)? counted = false: a rank without a batch in this update runs one
  // anyway to take part in the sums, and contributes zeros.
  void next_batch(bool first, bool last, bool counted = true);

  // GradientObserver: called by the steps during each training run.
  void begin(const std::vector<std::string>& names, int64_t target_tokens) override;
  void ready(size_t slot, const Tensor& grad) override;
  void after_node() override;
  bool during_backward_on_gpu() const override { return overlap_ && last_ && device_sums_ != nullptr; }

  // Waits for every sum of the update. Returns (name, parameter, Σ_ranks acc) per parameter in the
  // steps' order; with ZeRO-1 only this rank's own parameters (owns()) hold the sum.
  std::vector<optim::ParamSlot>& finish();
  // The slots whose optimizer state this rank keeps and updates: all of them at stage 0.
  const std::vector<optim::ParamSlot>& owned() const { return owned_; }
  bool owns(const std::string& param) const;

  // Divides every owned accumulator by the update's target tokens (the gradient of the mean loss).
  void divide(float tokens);
  // Clips the summed gradient to max_norm by its global L2 norm, as optim::clip_grad_norm does for
  // all slots in one process (the same double sums, in the same order); returns the norm.
  double clip_grad_norm(float max_norm);
  // ZeRO-1: after the optimizer stepped the owned parameters, every bucket's owner sends their new
  // values to all ranks. Stage 0: nothing (every rank stepped every parameter).
  void share_parameters();

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  int64_t bytes() const;                                // of all buckets
  double wait_seconds() const { return wait_seconds_; } // in finish(), over all updates: communication not hidden

 private:
  struct Bucket {
    Tensor flat;                                // (numel) f32: the accumulators of its slots, back to back
    std::vector<size_t> slots;                  // slot indices, in layout order
    int owner = dist::Communicator::kEveryRank; // ZeRO-1: the rank that gets the sum
    size_t waiting = 0;                         // gradients still to come in the rank's last batch
    int64_t ticket = -1;                        // the sum in flight, or -1
  };
  void lay_out(const std::vector<std::string>& names);
  void start(Bucket& b);
  void start_ready(); // starts the complete buckets from next_start_ on, in order, up to the first incomplete one
  bool owns_bucket(const Bucket& b) const; // this rank keeps its optimizer state (every rank at stage 0)

  dist::Communicator& comm_;
  dist::DeviceSums* device_sums_;
  ParamStore& params_;
  Device device_ = Device::cpu; // where the parameters and the buckets are
  int64_t bucket_bytes_;
  int zero_stage_;
  bool overlap_;
  std::vector<std::string> names_; // slot order
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;                   // slot → bucket
  std::vector<optim::ParamSlot> slots_, owned_;     // accumulators as slots (views into buckets)
  std::unordered_map<std::string, size_t> slot_of_; // name → slot
  std::vector<bool> reported_;                      // this batch: slot's gradient seen
  bool first_ = true, last_ = true, counted_ = true;
  float weight_ = 0;      // this batch's target tokens
  size_t in_flight_ = 0;  // buckets started and not yet seen done
  size_t next_start_ = 0; // the next bucket to start, in bucket order
  double wait_seconds_ = 0;
};

} // namespace pillars::train
