// How a test case that cannot run here says so.
//
// A case that needs something this machine or build lacks (a GPU, a dataset in $PILLARS_DATA, a
// program, an uninstrumented build) calls SKIP_TEST(reason...) and returns without checking
// anything. The marker it prints is what CTest reads: CMakeLists.txt registers the suite's cases
// with SKIP_REGULAR_EXPRESSION "test skipped: ", so such a case shows as "Skipped" with its reason
// in the log, never as "Passed". A case that checks part of its work and leaves out the rest says
// "not checked here: ..." instead, and still passes or fails on what it did check.
#pragma once

#include <doctest/doctest.h>

#include "runtime/cuda_device.h"

#define SKIP_TEST(...) MESSAGE("test skipped: ", __VA_ARGS__)

namespace pillars::testing {

// True (after marking the case skipped) when no CUDA device can run here: a CPU-only build, no
// driver, or no GPU. Each GPU case begins with `if (no_gpu()) return;`.
inline bool no_gpu() {
  if (cuda_device_count() > 0) return false;
  SKIP_TEST(cuda_unavailable_reason());
  return true;
}

} // namespace pillars::testing
