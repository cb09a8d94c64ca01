// See gradient_buckets.h.
#include "train/gradient_buckets.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "engine/optim/loops.h"

namespace pillars::train {

GradientBuckets::GradientBuckets(dist::Communicator& comm, ParamStore& params, double bucket_mb, int zero_stage,
                                 bool overlap, dist::DeviceSums* device_sums)
    : comm_(comm),
      device_sums_(device_sums),
      params_(params),
      bucket_bytes_(std::max<int64_t>(4, static_cast<int64_t>(bucket_mb * 1024 * 1024))),
      zero_stage_(zero_stage),
      overlap_(overlap) {
  PILLARS_CHECK(zero_stage == 0 || zero_stage == 1, "gradient buckets: ZeRO stage ", zero_stage, " (0 or 1)");
}

void GradientBuckets::next_batch(bool first, bool last, bool counted) {
  first_ = first, last_ = last, counted_ = counted;
  if (!counted) first_ = true; // a rank without a batch sends zeros: nothing to add to
}

// The steps' parameters, in slot order, laid out back to front into buckets (see the header).
void GradientBuckets::lay_out(const std::vector<std::string>& names) {
  names_ = names;
  const size_t n = names.size();
  bucket_of_.assign(n, 0);
  std::vector<int64_t> offset(n, 0);
  std::vector<int64_t> bucket_numel;
  buckets_.clear();
  for (size_t k = n; k-- > 0;) {
    const int64_t numel = params_.get(names[k]).numel();
    const bool full = !buckets_.empty() && (bucket_numel.back() + numel) * 4 > bucket_bytes_ && bucket_numel.back() > 0;
    if (buckets_.empty() || full) buckets_.emplace_back(), bucket_numel.push_back(0);
    bucket_of_[k] = buckets_.size() - 1;
    offset[k] = bucket_numel.back();
    bucket_numel.back() += numel;
    buckets_.back().slots.push_back(k);
  }
  // ZeRO-1: the largest bucket not yet dealt goes to the rank with the fewest bytes so far.
  if (zero_stage_ == 1) {
    std::vector<size_t> order(buckets_.size());
    for (size_t b = 0; b < order.size(); ++b) order[b] = b;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bucket_numel[a] > bucket_numel[b]; });
    std::vector<int64_t> load(static_cast<size_t>(comm_.size()), 0);
    for (const size_t b : order) {
      const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      buckets_[b].owner = static_cast<int>(r);
      load[r] += bucket_numel[b];
    }
  }
  slots_.clear(), owned_.clear(), slot_of_.clear();
  device_ = n > 0 ? params_.get(names[0]).device() : Device::cpu;
  if (device_ == Device::cuda && device_sums_ == nullptr && comm_.size() > 1)
    throw Error("data-parallel training on the GPU sums gradients with NCCL (parallel.backend \"nccl\")");
  for (size_t b = 0; b < buckets_.size(); ++b) buckets_[b].flat = Tensor::empty({bucket_numel[b]}, DType::f32, device_);
  for (size_t k = 0; k < n; ++k) {
    const Tensor& value = params_.get(names[k]);
    Bucket& b = buckets_[bucket_of_[k]];
    slots_.push_back({names[k], value, b.flat.slice0(offset[k], offset[k] + value.numel()).reshape(value.shape())});
    slot_of_[names[k]] = k;
    if (owns_bucket(b)) owned_.push_back(slots_.back());
  }
  reported_.assign(n, false);
}

void GradientBuckets::begin(const std::vector<std::string>& names, int64_t target_tokens) {
  if (buckets_.empty())
    lay_out(names);
  else if (names != names_)
    throw Error(
        "data-parallel training: a training step has other parameters than the buckets were laid out for (a "
        "model that changes, as pruning does, needs GradientBuckets of its own)");
  weight_ = static_cast<float>(target_tokens);
  std::fill(reported_.begin(), reported_.end(), false);
  if (last_) {
    for (Bucket& b : buckets_) b.waiting = b.slots.size(), b.ticket = -1;
    next_start_ = 0;
  }
}

void GradientBuckets::ready(size_t slot, const Tensor& grad) {
  PILLARS_CHECK(slot < slots_.size() && !reported_[slot], "gradient buckets: slot ", slot,
                " reported twice or unknown");
  reported_[slot] = true;
  Tensor& acc = slots_[slot].grad;
  PILLARS_CHECK(!grad.defined() || (grad.numel() == acc.numel() && grad.device() == device_),
                "gradient buckets: the gradient of ", names_[slot], " does not match its parameter");
  // A rank without a batch adds nothing: weight 0 on no gradient writes zeros.
  optim::accumulate_weighted(device_, acc.numel(), acc.data<float>(),
                             grad.defined() && counted_ ? grad.data<float>() : nullptr, counted_ ? weight_ : 0.0f,
                             first_);
  if (!last_) return;
  Bucket& b = buckets_[bucket_of_[slot]];
  if (--b.waiting == 0 && overlap_) start_ready();
}

void GradientBuckets::start_ready() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].waiting == 0) start(buckets_[next_start_++]);
}

void GradientBuckets::start(Bucket& b) {
  if (device_ == Device::cuda) { // queued behind the bucket's gradients: nothing for the host to wait for
    if (!device_sums_) return;   // one process: the sum over one rank is the bucket
    if (overlap_)
      device_sums_->start_sum(b.flat.data<float>(), b.flat.numel(), b.owner); // beside the backward
    else
      device_sums_->sum(b.flat.data<float>(), b.flat.numel(), b.owner);
    return;
  }
  b.ticket = comm_.start_sum(b.flat.data<float>(), b.flat.numel(), b.owner);
  ++in_flight_;
}

// Open MPI moves a nonblocking collective along only inside MPI calls: one test per node of the
// backward keeps the started sums going.
void GradientBuckets::after_node() {
  if (in_flight_ == 0) return;
  for (Bucket& b : buckets_) {
    if (b.ticket < 0) continue;
    if (comm_.test(b.ticket)) b.ticket = -1, --in_flight_;
    return; // one test is enough: it progresses every pending request
  }
}

std::vector<optim::ParamSlot>& GradientBuckets::finish() {
  const auto t0 = std::chrono::steady_clock::now();
  for (const Bucket& bucket : buckets_)
    if (bucket.waiting != 0)
      throw Error(str_cat("data-parallel training: the gradient of ", names_[bucket.slots[0]], " never arrived"));
  start_ready(); // every bucket not started yet (all of them without overlap), in order
  for (Bucket& b : buckets_)
    if (b.ticket >= 0) comm_.wait(b.ticket), b.ticket = -1;
  if (device_ == Device::cuda && device_sums_ && overlap_) device_sums_->join(); // the stream waits, not the host
  in_flight_ = 0;
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return slots_;
}

bool GradientBuckets::owns(const std::string& param) const {
  const auto it = slot_of_.find(param);
  if (it == slot_of_.end()) return true; // not laid out (no gradient yet): nobody has dropped its state
  return owns_bucket(buckets_[bucket_of_[it->second]]);
}

bool GradientBuckets::owns_bucket(const Bucket& b) const {
  return b.owner == dist::Communicator::kEveryRank || b.owner == comm_.rank();
}

void GradientBuckets::divide(float tokens) {
  for (optim::ParamSlot& s : owned_) optim::divide(device_, s.grad.numel(), s.grad.data<float>(), tokens);
}

double GradientBuckets::clip_grad_norm(float max_norm) {
  // ‖g‖² = Σ_slots Σ_elements g², summed over the slots in order, each slot's part by its owner.
  std::vector<double> squares(slots_.size(), 0.0);
  for (size_t k = 0; k < slots_.size(); ++k)
    if (owns_bucket(buckets_[bucket_of_[k]]))
      squares[k] = optim::sum_of_squares(device_, slots_[k].grad.numel(), slots_[k].grad.data<float>());
  if (zero_stage_ == 1) comm_.all_reduce_sum(squares.data(), static_cast<int64_t>(squares.size())); // x + 0 + … = x
  double sum = 0;
  for (const double s : squares) sum += s;
  const double norm = std::sqrt(sum);
  if (!std::isfinite(norm)) return norm;
  const double coef = double(max_norm) / (norm + 1e-6);
  if (coef < 1)
    for (optim::ParamSlot& s : owned_) optim::scale(device_, s.grad.numel(), s.grad.data<float>(), float(coef));
  return norm;
}

void GradientBuckets::share_parameters() {
  // One rank owns every bucket and stepped every parameter: nothing to send (and a one-process GPU
  // run with update_freq > 1 has no device_sums_ to broadcast with).
  if (zero_stage_ != 1 || comm_.size() == 1) return;
  for (Bucket& b : buckets_) {
    const bool mine = b.owner == comm_.rank();
    if (mine) // the bucket's accumulator space now carries the new values
      for (const size_t k : b.slots) slots_[k].grad.copy_from(slots_[k].value);
    if (device_ == Device::cuda)
      device_sums_->broadcast(b.flat.data<float>(), b.flat.numel(), b.owner);
    else
      comm_.broadcast(b.flat.data<float>(), b.flat.numel() * static_cast<int64_t>(sizeof(float)), b.owner);
    if (mine) continue;
    for (const size_t k : b.slots) slots_[k].value.copy_from(slots_[k].grad);
  }
}

int64_t GradientBuckets::bytes() const {
  int64_t total = 0;
  for (const Bucket& b : buckets_) total += b.flat.numel() * static_cast<int64_t>(sizeof(float));
  return total;
}

} // namespace pillars::train
