// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// the generator of Java's SplittableRandom): the one source of seeds and host-side random numbers.
//
//   SplitMix64 rng(seed);  rng.next();  rng.uniform();     a stream: state += γ, then mix(state)
//   mix_seeds(seed, update)                                 a fresh seed for (seed, update): two
//                                                           numbers in, one well-scrambled out
//
// γ = 0x9E3779B97F4A7C15 is 2^64 / φ (the golden ratio), so consecutive states are spread evenly;
// `mix` is three xor-shift-multiply rounds (the "Stafford variant 13" finalizer) that make every
// output bit depend on every input bit. It passes BigCrush and fits in a few lines, so any reader
// can reproduce our initial weights, dropout seeds and K-means draws in any language.
#pragma once
#include <cmath>
#include <cstdint>
#include <numbers>

namespace pillars {

inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;

// The finalizer: a bijection on 64-bit integers that scrambles every bit.
constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A seed for the pair (a, b): neighboring b (update 7 and 8, batch 3 and 4) give unrelated
// outputs. The added constant keeps (0, 0) away from the fixed point 0 of the finalizer.
constexpr uint64_t mix_seeds(uint64_t a, uint64_t b) {
  return splitmix64_mix(a * kSplitMixGamma + b + 0x632BE59BD9B4E019ull);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64_mix(state_ += kSplitMixGamma); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; } // top 53 bits: [0, 1)
  // N(0, 1) by Box–Muller on two uniforms, z = sqrt(−2 ln(1 − u1)) · cos(2π u2) (1 − u1 ∈ (0, 1]).
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

} // namespace pillars
