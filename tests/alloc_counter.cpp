// A replacement operator new that counts calls while a pillars::testing::AllocationCounter is
// live; see alloc_counter.h. It pairs with the standard library's operator delete (free()).
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

namespace pillars::testing {

AllocationCounter::AllocationCounter() {
  g_allocations = 0;
  g_counting = true;
  // The probe: counted iff our operator new is in use. Through a volatile pointer, because the
  // compiler may otherwise elide a new/delete pair (C++14 allows it, and -O3 does).
  int* volatile probe = new int(0);
  delete probe;
  active_ = g_allocations.exchange(0) == 1;
}

AllocationCounter::~AllocationCounter() { g_counting = false; }

long AllocationCounter::stop() {
  g_counting = false;
  return g_allocations.load();
}

} // namespace pillars::testing
