// Parameter initialisation: seeded, deterministic, the same on every machine.
//
// A model lists its parameters as ParamSpecs (name, shape, how to initialise); init_parameters
// creates each one in a ParamStore and fills it. The random numbers of a parameter come from its
// own stream, seeded by (run seed, parameter name): a parameter's initial value never depends on
// which other parameters exist or in which order they are created, so adding a module to a model
// leaves the others' starting points untouched.
//
// The generator is splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; the 64-bit mixer Java's SplittableRandom uses): state += golden ratio,
// then three xor-shift-multiply rounds. It passes BigCrush and is ten lines, so any reader can
// reproduce our initial weights in any language:
//   uniform: the top 53 bits of a draw, · 2^-53, in [0, 1);
//   normal:  Box–Muller on two uniforms, z = sqrt(−2 ln(1 − u1)) · cos(2π u2) (one draw pair per
//            value: simple, and initialisation is not on any hot path).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/params.h"
#include "engine/tensor.h"

namespace pillars::init {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; } // [0, 1)
  double normal();                                                           // N(0, 1)

 private:
  uint64_t state_;
};

// The stream seed of one parameter: splitmix64-mixed (seed, FNV-1a hash of the name).
uint64_t stream_seed(uint64_t seed, const std::string& name);

// How a parameter starts (fairseq's choices for its transformer; see models/transformer.cpp).
enum class Init {
  xavier_uniform, // U(−a, a), a = gain · sqrt(6 / (fan_in + fan_out)); W is (fan_out, fan_in)
  embedding,      // N(0, std² = dim^-1) for a (rows, dim) table, row `padding_row` set to 0
  zeros,
  ones,
};

struct ParamSpec {
  std::string name;
  Shape shape;
  Init init = Init::zeros;
  double gain = 1.0;         // xavier_uniform
  int64_t padding_row = -1;  // embedding: the row kept at zero (the pad token), −1 for none
};

// Fill an existing f32 tensor.
void xavier_uniform(Tensor& w, double gain, SplitMix64& rng); // w (fan_out, fan_in)
void normal(Tensor& w, double mean, double std, SplitMix64& rng);

// Creates every parameter of `specs` in `store` (names must be new) and initialises it.
void init_parameters(const std::vector<ParamSpec>& specs, ParamStore& store, uint64_t seed);

} // namespace pillars::init
