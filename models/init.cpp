// Parameter initialization: see init.h.
#include "models/init.h"

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace pillars::init {

uint64_t stream_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull; // FNV-1a, 64-bit
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  SplitMix64 mix(seed ^ h);
  return mix.next();
}

void xavier_uniform(Tensor& w, double gain, SplitMix64& rng) {
  PILLARS_CHECK(w.rank() == 2, "xavier_uniform: expected a (fan_out, fan_in) matrix, got ", shape_str(w.shape()));
  const double fan_out = static_cast<double>(w.dim(0)), fan_in = static_cast<double>(w.dim(1));
  const double a = gain * std::sqrt(6.0 / (fan_in + fan_out));
  float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * a);
}

void normal(Tensor& w, double mean, double std, SplitMix64& rng) {
  float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = static_cast<float>(mean + std * rng.normal());
}

void init_parameters(const std::vector<ParamSpec>& specs, ParamStore& store, uint64_t seed) {
  for (const ParamSpec& s : specs) {
    Tensor& t = store.add(s.name, s.shape); // zero-filled
    SplitMix64 rng(stream_seed(seed, s.name));
    switch (s.init) {
      case Init::xavier_uniform:
        xavier_uniform(t, s.gain, rng);
        break;
      case Init::embedding: {
        PILLARS_CHECK(t.rank() == 2, "init: embedding '", s.name, "' must be (rows, dim), got ", shape_str(s.shape));
        normal(t, 0.0, 1.0 / std::sqrt(static_cast<double>(t.dim(1))), rng);
        if (s.padding_row >= 0) {
          PILLARS_CHECK(s.padding_row < t.dim(0), "init: padding row ", s.padding_row, " outside '", s.name, "'");
          float* row = t.data<float>() + s.padding_row * t.dim(1);
          for (int64_t j = 0; j < t.dim(1); ++j) row[j] = 0.0f;
        }
        break;
      }
      case Init::zeros:
        break;
      case Init::ones:
        t.fill(1.0f);
        break;
    }
  }
}

} // namespace pillars::init
