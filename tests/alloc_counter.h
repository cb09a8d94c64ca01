// Counting heap allocations in tests: "no allocation once shapes repeat" is a property we assert.
//
//   AllocationCounter counter;          // starts counting operator new calls (all threads)
//   ... work ...
//   if (counter.active()) CHECK(counter.stop() == 0);
//
// The test binary replaces operator new (tests/alloc_counter.cpp). Under a sanitizer, which owns
// operator new itself, active() is false and callers skip the check with a message.
#pragma once

namespace pillars::testing {

class AllocationCounter {
 public:
  AllocationCounter();                    // resets the count and starts counting
  ~AllocationCounter();                   // stops counting
  long stop();                            // stops counting and returns the number of allocations seen
  bool active() const { return active_; } // false: our operator new is not the one in use
 private:
  bool active_ = false;
};

} // namespace pillars::testing
