#pragma once
// Time as a seam: the supervisor of `launch` and the loop of `watch` ask a Clock, so tests drive
// grace periods and intervals with a fake one instead of sleeping. Only src/sys reads a clock
// or sleeps (lint rule R8).
#include <chrono>

namespace gpubind::sys {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  // Waits `d` (a fake clock moves on by it at once).
  virtual void sleep_for(std::chrono::milliseconds d) const = 0;
};

// The monotonic clock (CLOCK_MONOTONIC through std::chrono::steady_clock).
const Clock& steady_clock();

}  // namespace gpubind::sys
