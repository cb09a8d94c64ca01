// Philox4x32-10 against the known-answer vectors published with Random123 (Salmon et al. 2011,
// kat_vectors: "philox4x32 10 <ctr0..3> <key0..1> <out0..3>"). Every dropout mask in Pillars, on
// any device, is derived from this function, so it is pinned to the reference, not to itself.
#include <doctest/doctest.h>

#include "kernels/philox.h"

using namespace pillars;

TEST_CASE("philox: Random123 known-answer vectors") {
  struct Kat {
    Philox4 counter;
    uint32_t k0, k1;
    Philox4 expected;
  };
  const Kat kats[] = {
      {{{0u, 0u, 0u, 0u}}, 0u, 0u, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const Philox4 got = philox4x32_10(k.counter, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) CHECK(got.v[i] == k.expected.v[i]);
  }
}

TEST_CASE("philox: the 64-bit form is the 128-bit counter with zero upper words") {
  const uint64_t counter = 0x0123456789abcdefull, seed = 0xfedcba9876543210ull;
  const Philox4 a = philox4x32_10(counter, seed);
  const Philox4 b = philox4x32_10(Philox4{{0x89abcdefu, 0x01234567u, 0u, 0u}}, 0x76543210u, 0xfedcba98u);
  for (int i = 0; i < 4; ++i) CHECK(a.v[i] == b.v[i]);
}

TEST_CASE("philox: uniforms lie in the unit interval with mean one half") {
  double sum = 0;
  const int n = 1 << 16;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(42, 8, static_cast<uint64_t>(i));
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    sum += u;
  }
  // Mean of n uniforms: 0.5 ± 1/sqrt(12 n) ≈ 0.5 ± 0.0011; allow 5σ.
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.0115));
}
