// Run-time ISA detection (see cpu_features.h).
//
// __builtin_cpu_supports (libgcc) reads CPUID once at start-up and also checks, through XGETBV,
// that the OS saves the AVX / AVX-512 register state, so a "yes" here means the instructions are
// safe to execute. The bf16 features are read from CPUID directly (leaf 7):
//   AVX512_BF16  leaf 7, subleaf 1, EAX bit 5   (uses the zmm state the AVX-512 check covered)
//   AMX-BF16     leaf 7, subleaf 0, EDX bit 22
//   AMX-TILE     leaf 7, subleaf 0, EDX bit 24
// AMX's 8 KiB of tile registers are not saved for a process unless it asks: Linux (5.16 and
// later) grants them on arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), and refuses it when
// the kernel or the hypervisor does not support the state. Without the grant the first tile
// instruction kills the process (SIGILL), so amx counts as detected only once the grant succeeded.
#include "kernels/cpu/cpu_features.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pillars::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// One bit of CPUID leaf 7 (`subleaf`, register `reg`: 0 EAX, 3 EDX).
bool cpuid7_bit(unsigned subleaf, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, subleaf, r[0], r[1], r[2], r[3]);
  return (r[reg] >> bit) & 1u;
}
#endif

// Asks Linux for the AMX tile data state for this process (once; the grant is process-wide).
bool request_amx_tile_state() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023; // ARCH_REQ_XCOMP_PERM (asm/prctl.h)
  constexpr long kXfeatureXtiledata = 18;    // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool avx512_bf16 = avx512 && cpuid7_bit(1, 0, 5);
  const bool amx = avx512_bf16 && cpuid7_bit(0, 3, 22) && cpuid7_bit(0, 3, 24) && request_amx_tile_state();
  if (amx) return Isa::amx;
  if (avx512_bf16) return Isa::avx512_bf16;
  if (avx512) return Isa::avx512;
  if (avx2) return Isa::avx2;
#endif
  return Isa::generic;
}

Isa clamp_to_cpu(Isa wanted, const char* who) {
  const Isa best = detected_isa();
  if (static_cast<int>(wanted) <= static_cast<int>(best)) return wanted;
  std::fprintf(stderr, "pillars: %s asks for %s but this CPU supports only %s; using %s\n", who, isa_name(wanted),
               isa_name(best), isa_name(best));
  return best;
}

// PILLARS_ISA, read once.
Isa from_environment() {
  const char* env = std::getenv("PILLARS_ISA");
  if (env == nullptr || *env == '\0') return detected_isa();
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512, Isa::avx512_bf16, Isa::amx})
    if (std::strcmp(env, isa_name(isa)) == 0) return clamp_to_cpu(isa, "PILLARS_ISA");
  std::fprintf(stderr, "pillars: ignoring PILLARS_ISA=%s (expected amx, avx512_bf16, avx512, avx2 or generic)\n", env);
  return detected_isa();
}

constexpr int kNoOverride = -1;
std::atomic<int> g_forced{kNoOverride};

} // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::amx:
      return "amx";
    case Isa::avx512_bf16:
      return "avx512_bf16";
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::generic:
      return "generic";
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

void force_isa(Isa isa) { g_forced.store(static_cast<int>(clamp_to_cpu(isa, "force_isa")), std::memory_order_relaxed); }

void clear_forced_isa() { g_forced.store(kNoOverride, std::memory_order_relaxed); }

ScopedIsa::ScopedIsa(Isa isa) : previous_(g_forced.load(std::memory_order_relaxed)) { force_isa(isa); }

ScopedIsa::~ScopedIsa() { g_forced.store(previous_, std::memory_order_relaxed); }

} // namespace pillars::cpu
