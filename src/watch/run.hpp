#pragma once
// The watch loop: sample, judge, hand the interval to a Sink, wait for the next sample's time.
// Samples are due on a fixed schedule from the first (0, interval, 2 x interval...): a sample's
// own cost (NVML's PCIe counters block about 20 ms per GPU and counter) does not stretch the
// intervals, and a sample due while the one before still ran is skipped, not taken late in a burst.
// The clock is a seam: watch::StepClock replays a recorded sequence, tests drive it by hand.
#include <functional>
#include <optional>

#include "sys/clock.hpp"
#include "util/result.hpp"
#include "watch/sampler.hpp"
#include "watch/watch.hpp"

namespace gpubind::watch {

struct Schedule {
  double interval = 1;            // seconds between samples
  std::optional<unsigned> count;  // stop after this many intervals
  double duration = 0;            // stop after the interval that ends by this many seconds (0: never)
};

// Where the samples and intervals go: the terminal, a JSON log, /metrics, a textfile.
class Sink {
 public:
  virtual ~Sink() = default;
  // Every sample, before it is judged: its errors and notes; `index` 0 for the first.
  virtual void sampled(const Taken& t, unsigned index) = 0;
  // Every judged interval, with the watcher (its summary so far) and the sample's cost in seconds.
  // An error ends the watch.
  virtual Status interval(const Interval& iv, const Watcher& watcher, double cost_seconds) = 0;
};

struct Outcome {
  Summary summary;
  bool seen_any = false;         // some sample found a process
  bool errors = false;           // some sample could not read a named process
  std::optional<Error> stopped;  // the Sink's error that ended the watch
};

// `stop`, asked after every wait: a stop signal arrived (sys::InterruptibleClock), so the watch
// ends there, with the intervals it has, as if its count or duration were reached.
Outcome run(Sampler& sampler, Watcher& watcher, const sys::Clock& clock, const Schedule& schedule, Sink& sink,
            const std::function<bool()>& stop = {});

}  // namespace gpubind::watch
