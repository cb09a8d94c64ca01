// Run-time CPU feature detection and ISA selection for the CPU kernels.
//
// The whole build targets the x86-64 baseline (SSE2), so the binary starts on any x86-64 machine.
// Faster code lives in files named *_avx2.cpp / *_avx512.cpp / *_avx512bf16.cpp / *_amx.cpp,
// compiled with those ISA flags; a kernel may call into them only after asking here that the CPU
// (and the OS, which must save the wider registers) supports them.
//
// Which path runs:
//   1. detected_isa(): the best ISA this CPU supports (asked once, via __builtin_cpu_supports and
//      CPUID; for AMX the Linux kernel must also grant the process the tile state, requested once).
//   2. The environment variable PILLARS_ISA=amx|avx512_bf16|avx512|avx2|generic lowers it (read
//      once), e.g. to test the AVX2 path on an AVX-512 machine. Asking for more than the CPU has is
//      clamped, with a warning on stderr.
//   3. force_isa() overrides both at run time (tests and benchmarks use it to run every path in
//      one process); the same clamping applies.
//   active_isa() returns the result and is cheap enough to call on every kernel invocation.
#pragma once

namespace pillars::cpu {

// Ordered: a larger value is a superset of a smaller one. The two bf16 levels add instructions
// only the bf16 GEMM (gemm_bf16.h) uses; every fp32 kernel runs its AVX-512 code at them, so a
// run's fp32 arithmetic is the same at avx512, avx512_bf16 and amx.
enum class Isa : int {
  generic = 0,     // portable C++ (x86-64 baseline SSE2, or whatever the target is)
  avx2 = 1,        // AVX2 + FMA
  avx512 = 2,      // AVX-512 F/BW/VL/DQ (+ AVX2, FMA)
  avx512_bf16 = 3, // + AVX512_BF16 (vdpbf16ps: bf16 pair dot products into fp32)
  amx = 4,         // + AMX-TILE and AMX-BF16 (tdpbf16ps on 16 × 32 tiles), tile state granted
};

const char* isa_name(Isa isa);

// The best ISA this CPU supports, ignoring PILLARS_ISA and force_isa().
Isa detected_isa();

// True when code compiled for `isa` may run on this CPU.
bool isa_supported(Isa isa);

// The ISA kernels should use now: force_isa() if set, else PILLARS_ISA, else detected_isa().
Isa active_isa();

// Run-time override (thread-safe; affects all threads). Clamped to detected_isa().
void force_isa(Isa isa);
// Drop the override: back to PILLARS_ISA / detection.
void clear_forced_isa();

// Forces an ISA for the lifetime of the object, then restores the previous setting.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa);
  ~ScopedIsa();
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  int previous_; // the raw override value that was in place (-1: none)
};

} // namespace pillars::cpu
