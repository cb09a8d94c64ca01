// Counting allocations while a pillars::testing::AllocationCounter is live; see alloc_counter.h.
//
// Two hooks: a replacement operator new (pairs with the standard library's operator delete, which
// calls free()), and the C allocators — malloc, calloc, realloc, aligned_alloc, posix_memalign —
// wrapped at link time (`-Wl,--wrap=...` on the test binary, see CMakeLists.txt), which catches
// tensor storage and the kernels' scratch buffers in our own code.
#include "tests/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
} // namespace

#if defined(__SANITIZE_ADDRESS__)
#define PILLARS_TEST_COUNT_ALLOCATIONS 0 // the sanitizer owns operator new/delete
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PILLARS_TEST_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef PILLARS_TEST_COUNT_ALLOCATIONS
#define PILLARS_TEST_COUNT_ALLOCATIONS 1
#endif

#if PILLARS_TEST_COUNT_ALLOCATIONS
void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
#endif

extern "C" {
void* __real_malloc(size_t);
void* __real_calloc(size_t, size_t);
void* __real_realloc(void*, size_t);
void* __real_aligned_alloc(size_t, size_t);
int __real_posix_memalign(void**, size_t, size_t);

static void count_one() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
void* __wrap_malloc(size_t n) {
  count_one();
  return __real_malloc(n);
}
void* __wrap_calloc(size_t n, size_t size) {
  count_one();
  return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, size_t n) {
  count_one();
  return __real_realloc(p, n);
}
void* __wrap_aligned_alloc(size_t alignment, size_t n) {
  count_one();
  return __real_aligned_alloc(alignment, n);
}
int __wrap_posix_memalign(void** p, size_t alignment, size_t n) {
  count_one();
  return __real_posix_memalign(p, alignment, n);
}
}

namespace pillars::testing {

AllocationCounter::AllocationCounter() {
  g_allocations = 0;
  g_counting = true;
  // The probes: counted iff our hooks are in use. Through volatile pointers, because the compiler
  // may otherwise elide a new/delete pair (C++14 allows it, and -O3 does).
  int* volatile probe = new int(0);
  delete probe;
  const long by_new = g_allocations.exchange(0);
  void* volatile block = std::aligned_alloc(64, 64);
  std::free(block);
  const long by_c_allocator = g_allocations.exchange(0);
  active_ = by_new >= 1 && by_c_allocator == 1; // (new counts twice: it calls the wrapped malloc)
}

AllocationCounter::~AllocationCounter() { g_counting = false; }

long AllocationCounter::stop() {
  g_counting = false;
  return g_allocations.load();
}

} // namespace pillars::testing
