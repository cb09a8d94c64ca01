// Run-time ISA detection (see cpu_features.h).
//
// __builtin_cpu_supports (libgcc) reads CPUID once at start-up and also checks, through XGETBV,
// that the OS saves the AVX / AVX-512 register state, so a "yes" here means the instructions are
// safe to execute.
#include "kernels/cpu/cpu_features.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pillars::cpu {
namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return Isa::avx512;
  if (avx2) return Isa::avx2;
#endif
  return Isa::generic;
}

Isa clamp_to_cpu(Isa wanted, const char* who) {
  const Isa best = detected_isa();
  if (static_cast<int>(wanted) <= static_cast<int>(best)) return wanted;
  std::fprintf(stderr, "pillars: %s asks for %s but this CPU supports only %s; using %s\n", who,
               isa_name(wanted), isa_name(best), isa_name(best));
  return best;
}

// PILLARS_ISA, read once.
Isa from_environment() {
  const char* env = std::getenv("PILLARS_ISA");
  if (env == nullptr || *env == '\0') return detected_isa();
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    if (std::strcmp(env, isa_name(isa)) == 0) return clamp_to_cpu(isa, "PILLARS_ISA");
  std::fprintf(stderr, "pillars: ignoring PILLARS_ISA=%s (expected avx512, avx2 or generic)\n", env);
  return detected_isa();
}

constexpr int kNoOverride = -1;
std::atomic<int> g_forced{kNoOverride};

} // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
  case Isa::avx512: return "avx512";
  case Isa::avx2: return "avx2";
  case Isa::generic: return "generic";
  }
  return "?";
}

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(detected_isa()); }

Isa active_isa() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced != kNoOverride) return static_cast<Isa>(forced);
  static const Isa from_env = from_environment();
  return from_env;
}

void force_isa(Isa isa) {
  g_forced.store(static_cast<int>(clamp_to_cpu(isa, "force_isa")), std::memory_order_relaxed);
}

void clear_forced_isa() { g_forced.store(kNoOverride, std::memory_order_relaxed); }

ScopedIsa::ScopedIsa(Isa isa) : previous_(g_forced.load(std::memory_order_relaxed)) { force_isa(isa); }

ScopedIsa::~ScopedIsa() { g_forced.store(previous_, std::memory_order_relaxed); }

} // namespace pillars::cpu
