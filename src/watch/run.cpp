#include "watch/run.hpp"

#include <chrono>

namespace gpubind::watch {

namespace {

using Ms = std::chrono::milliseconds;

// The next sample's due time after `due`: the first slot of the schedule still ahead of `now`.
sys::Clock::time_point next_due(sys::Clock::time_point due, sys::Clock::time_point now, Ms step) {
  do due += step;
  while (due <= now && step.count() > 0);
  return due;
}

}  // namespace

Outcome run(Sampler& sampler, Watcher& watcher, const sys::Clock& clock, const Schedule& schedule, Sink& sink,
            const std::function<bool()>& stop) {
  Outcome out;
  const Ms step(long(schedule.interval * 1000 + 0.5));
  sys::Clock::time_point due = clock.now();
  for (unsigned taken = 0;; ++taken) {
    Taken t = sampler.take();
    sink.sampled(t, taken);
    out.errors = out.errors || !t.errors.empty();
    out.seen_any = out.seen_any || !t.snapshot.processes.empty();
    double now = t.snapshot.t;
    double cost = t.cost_seconds;
    if (auto iv = watcher.observe(std::move(t.snapshot)))
      if (Status s = sink.interval(*iv, watcher, cost); !s) {
        out.stopped = s.error();
        break;
      }
    if (schedule.count && taken >= *schedule.count) break;
    // The last interval is the one that ends by the duration, give or take half an interval.
    if (schedule.duration > 0 && now + schedule.interval > schedule.duration + schedule.interval / 2) break;
    sys::Clock::time_point at = clock.now();
    due = next_due(due, at, step);
    clock.sleep_for(std::chrono::duration_cast<Ms>(due - at));
    if (stop && stop()) break;
  }
  out.summary = watcher.summary();
  return out;
}

}  // namespace gpubind::watch
