// Philox4x32-10: a counter-based random number generator (Salmon et al., SC'11, "Parallel random
// numbers: as easy as 1, 2, 3"). Random numbers are a pure function of (key, counter), so the
// dropout mask of element i is the same on any device, in any thread order, and can be recomputed
// in the backward pass instead of being stored.
//
// Convention used by every dropout in Pillars (CPU and CUDA must agree):
//   key     = the 64-bit seed of the op (split into two 32-bit words),
//   counter = (offset + i) / 4 as a 128-bit number (low 64 bits used), where i is the flat
//             element index and offset the op's RNG offset; word (offset + i) % 4 of the result
//             is element i's random 32-bit integer; uniform u = (bits >> 8) * 2^-24 ∈ [0, 1).
//   keep(i) = u >= p ; a kept element is scaled by 1 / (1 - p).
// Offsets are multiples of 4 in practice, so one Philox call serves four consecutive elements.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define PILLARS_HD __host__ __device__ __forceinline__
#else
#define PILLARS_HD inline
#endif

namespace pillars {

struct Philox4 {
  uint32_t v[4];
};

PILLARS_HD uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Ten rounds of Philox4x32 on a 128-bit counter (c0 lowest) with a 64-bit key (k0 lowest); the
// multipliers and Weyl constants are the published ones (Random123), checked against its
// known-answer vectors in tests/test_philox.cpp.
PILLARS_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = philox_mulhilo(0xD2511F53u, c.v[0], &hi0);
    const uint32_t lo1 = philox_mulhilo(0xCD9E8D57u, c.v[2], &hi1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The form every dropout uses: a 64-bit counter (upper words zero) and a 64-bit seed as the key.
PILLARS_HD Philox4 philox4x32_10(uint64_t counter, uint64_t seed) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The uniform number in [0, 1) for flat element `index` of a stream (seed, offset).
PILLARS_HD float philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t n = offset + index;
  const Philox4 r = philox4x32_10(n >> 2, seed);
  return static_cast<float>(r.v[n & 3] >> 8) * (1.0f / 16777216.0f);
}

} // namespace pillars
