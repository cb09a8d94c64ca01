// Parameter initialization: seeded, deterministic, the same on every machine.
//
// A model lists its parameters as ParamSpecs (name, shape, how to initialize); init_parameters
// creates each one in a ParamStore and fills it. The random numbers of a parameter come from its
// own stream, seeded by (run seed, parameter name): a parameter's initial value never depends on
// which other parameters exist or in which order they are created, so adding a module to a model
// leaves the others' starting points untouched.
//
// The generator is SplitMix64 (base/splitmix64.h): uniform draws are the top 53 bits of a draw,
// normal ones Box–Muller on two uniforms (one draw pair per value: simple, and initialization is
// not on any hot path), so any reader can reproduce our initial weights in any language.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/splitmix64.h"
#include "engine/params.h"
#include "engine/tensor.h"

namespace pillars::init {

using pillars::SplitMix64;

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
  double gain = 1.0;        // xavier_uniform
  int64_t padding_row = -1; // embedding: the row kept at zero (the pad token), −1 for none
};

// Fill an existing f32 tensor.
void xavier_uniform(Tensor& w, double gain, SplitMix64& rng); // w (fan_out, fan_in)
void normal(Tensor& w, double mean, double std, SplitMix64& rng);

// Creates every parameter of `specs` in `store` (names must be new) and initializes it.
void init_parameters(const std::vector<ParamSpec>& specs, ParamStore& store, uint64_t seed);

} // namespace pillars::init
