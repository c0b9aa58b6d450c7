#pragma once
// Time as a seam: the supervisor of `launch` and the loop of `watch` ask a Clock, so tests drive
// grace periods and intervals with a fake one instead of sleeping. Only src/sys reads a clock
// or sleeps (lint rule R8).
#include <chrono>
#include <memory>
#include <string>

#include "util/result.hpp"

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

// Now as an RFC 3339 UTC timestamp with milliseconds ("2026-12-04T20:52:47.123Z"), for records
// that leave the node. Where SOURCE_DATE_EPOCH is set (reproducible outputs: the tests' goldens),
// that second instead.
std::string utc_timestamp();

class SignalWatch;  // sys/signal_watch.hpp

// The monotonic clock whose sleeps end early at SIGINT, SIGTERM or SIGHUP: a service's loop
// (`watch`) stops at its next wait and finishes its output instead of dying of the signal. The
// signals are blocked from construction (make it before any thread starts: threads inherit the
// mask) and taken through a signalfd; the mask is restored on destruction.
class InterruptibleClock final : public Clock {
 public:
  static Result<std::unique_ptr<InterruptibleClock>> create();
  ~InterruptibleClock() override;
  InterruptibleClock(const InterruptibleClock&) = delete;
  InterruptibleClock& operator=(const InterruptibleClock&) = delete;
  time_point now() const override;
  void sleep_for(std::chrono::milliseconds d) const override;
  // The stop signal received, or 0.
  int stopped_by() const { return m_signal; }

 private:
  explicit InterruptibleClock(std::unique_ptr<SignalWatch> watch);
  std::unique_ptr<SignalWatch> m_watch;
  mutable int m_signal = 0;
};

}  // namespace gpubind::sys
