// What every benchmark needs: a robust timer, random inputs, and a comparison of results.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "engine/tensor.h"

namespace pillars::bench {

// Median seconds of `repeats` calls of f, after one warm-up call (first touch of buffers, lazy
// state). The median, not the mean: a shared machine's hiccups should not move the figure.
inline double median_seconds(int repeats, const std::function<void()>& f) {
  f();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The median seconds of each of fs, timed in turns: one warm-up call each, then `repeats` rounds
// that call f0, f1, ... once each. Ratios between them then hold on a machine whose speed drifts
// (other load, clocks), which timing one after the other would fold into the comparison.
inline std::vector<double> interleaved_medians(int repeats, const std::vector<std::function<void()>>& fs) {
  for (const auto& f : fs) f();
  std::vector<std::vector<double>> times(fs.size());
  for (int r = 0; r < repeats; ++r)
    for (size_t i = 0; i < fs.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fs[i]();
      times[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

// `elements` uniform values in [-1, 1).
inline std::vector<float> random_floats(int64_t elements, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(elements));
  for (float& e : x) e = dist(rng);
  return x;
}

// An i32 tensor of random token ids in [4, vocab) (0..3 are the dictionary's specials).
inline Tensor random_token_ids(const Shape& shape, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(4, static_cast<int32_t>(vocab - 1)); // 0..3 are specials
  Tensor t = Tensor::empty(shape, DType::i32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = dist(rng);
  return t;
}

// max |ours − theirs| / max |theirs|: how far two implementations' results are apart.
inline double max_rel_diff(const std::vector<float>& ours, const std::vector<float>& theirs) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    diff = std::max(diff, double(std::fabs(ours[i] - theirs[i])));
    scale = std::max(scale, double(std::fabs(theirs[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

} // namespace pillars::bench
