// watch::run over the recorded DGX H100 sequence (tests/data/check/watch-h100: an 8-rank job under
// `gpubind launch`, PID 1000), driven by clocks the test controls.
#include "watch/run.hpp"

#include <gtest/gtest.h>

#include "discover/source.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::watch {
namespace {

std::string tree(int i) { return std::string(GPUBIND_SOURCE_DIR) + "/tests/data/check/watch-h100/" + std::to_string(i); }

// A step clock whose sink can also spend time, as a real sample's probing and NVML calls do.
class CostlyClock final : public sys::Clock {
 public:
  time_point now() const override { return m_now; }
  void sleep_for(std::chrono::milliseconds d) const override {
    m_slept.push_back(d);
    m_now += d;
  }
  void spend(std::chrono::milliseconds d) const { m_now += d; }
  mutable std::vector<std::chrono::milliseconds> m_slept;

 private:
  mutable time_point m_now{};
};

struct Recorder final : Sink {
  explicit Recorder(const CostlyClock* clock = nullptr, std::chrono::milliseconds cost = {}) : m_clock(clock), m_cost(cost) {}
  void sampled(const Taken& t, unsigned index) override {
    indices.push_back(index);
    sample_times.push_back(t.snapshot.t);
    errors += t.errors.size();
    if (m_clock) m_clock->spend(m_cost);
  }
  Status interval(const Interval& iv, const Watcher& w, double) override {
    intervals.push_back(iv);
    so_far.push_back(w.summary().intervals);
    if (fail_at && intervals.size() == *fail_at) return Error{"--textfile", "No space left on device"};
    return Ok{};
  }
  std::vector<unsigned> indices, so_far;
  std::vector<double> sample_times;
  std::vector<Interval> intervals;
  size_t errors = 0;
  std::optional<size_t> fail_at;

 private:
  const CostlyClock* m_clock;
  std::chrono::milliseconds m_cost;
};

struct Fixture {
  Fixture() {
    for (int i = 0; i < 3; ++i) {
      auto root = sys::open_fsroot(tree(i));
      EXPECT_TRUE(root) << tree(i);
      if (root) opened.push_back(std::move(*root));
    }
    for (const auto& r : opened) roots.push_back(r.get());
  }
  // A watch of the recorded trees: `sel` sampled on `clock`, judged on the DGX H100 example.
  Outcome watch(const sys::Clock& clock, probe::Selection sel, const Schedule& schedule, Sink& sink,
                const std::function<bool()>& stop = {}) {
    Sampler sampler(roots, clock, {std::move(sel), 0, {}, {}});
    Watcher watcher(topo, {});
    return run(sampler, watcher, clock, schedule, sink, stop);
  }
  topo::Topology topo = *discover::load_topology("example:dgx-h100");
  std::vector<std::unique_ptr<sys::FsRoot>> opened;
  std::vector<const sys::FsRoot*> roots;
};

probe::Selection children_of_launcher() {
  probe::Selection s;
  s.children_of = 1000;
  return s;
}

TEST(WatchRun, ACountOfIntervalsTakesOneSampleMoreAndHandsEachIntervalToTheSink) {
  Fixture fx;
  StepClock clock;
  Recorder sink;
  Outcome o = fx.watch(clock, children_of_launcher(), {1.0, 2u, 0}, sink);
  EXPECT_EQ(sink.indices, (std::vector<unsigned>{0, 1, 2}));
  ASSERT_EQ(sink.intervals.size(), 2u);
  EXPECT_EQ(sink.so_far, (std::vector<unsigned>{1, 2}));  // the watcher had judged each before the sink saw it
  EXPECT_EQ(o.summary.intervals, 2u);
  EXPECT_EQ(o.summary.ranks.size(), 8u);
  EXPECT_TRUE(o.seen_any);
  EXPECT_FALSE(o.errors);
  EXPECT_FALSE(o.stopped);
  EXPECT_TRUE(o.summary.any_finding);  // the recorded job has a migrating and a misplaced rank
}

TEST(WatchRun, SamplesFallDueOnTheScheduleWhateverTheyCost) {
  Fixture fx;
  CostlyClock clock;
  Recorder sink(&clock, std::chrono::milliseconds(42));  // NVML's PCIe counters on one H200
  fx.watch(clock, children_of_launcher(), {1.0, 3u, 0}, sink);
  // 0, 1, 2, 3 s: not 0, 1.042, 2.084, 3.126 as a loop that sleeps a whole interval drifts.
  EXPECT_EQ(sink.sample_times, (std::vector<double>{0.0, 1.0, 2.0, 3.0}));
  EXPECT_EQ(clock.m_slept, (std::vector<std::chrono::milliseconds>(3, std::chrono::milliseconds(958))));
  for (const Interval& iv : sink.intervals) EXPECT_DOUBLE_EQ(iv.end - iv.start, 1.0);
}

TEST(WatchRun, ASampleDueWhileTheOneBeforeStillRanIsSkippedNotTakenLate) {
  Fixture fx;
  CostlyClock clock;
  Recorder sink(&clock, std::chrono::milliseconds(2500));  // each sample outlasts two intervals
  fx.watch(clock, children_of_launcher(), {1.0, 2u, 0}, sink);
  // Due at 0, then at 3 (1 and 2 passed while the first ran), then at 6.
  EXPECT_EQ(sink.sample_times, (std::vector<double>{0.0, 3.0, 6.0}));
  EXPECT_EQ(clock.m_slept, (std::vector<std::chrono::milliseconds>(2, std::chrono::milliseconds(500))));
}

TEST(WatchRun, ADurationEndsWithTheIntervalThatEndsByIt) {
  Fixture fx;
  StepClock clock;
  Recorder sink;
  Outcome o = fx.watch(clock, children_of_launcher(), {0.5, std::nullopt, 2.0}, sink);
  EXPECT_EQ(sink.sample_times, (std::vector<double>{0.0, 0.5, 1.0, 1.5, 2.0}));
  EXPECT_EQ(o.summary.intervals, 4u);
}

TEST(WatchRun, ASinksErrorEndsTheWatchAndIsReturned) {
  Fixture fx;
  StepClock clock;
  Recorder sink;
  sink.fail_at = 1;
  Outcome o = fx.watch(clock, children_of_launcher(), {1.0, 5u, 0}, sink);
  ASSERT_TRUE(o.stopped);
  EXPECT_EQ(o.stopped->message(), "--textfile: No space left on device");
  EXPECT_EQ(sink.intervals.size(), 1u);
  EXPECT_EQ(o.summary.intervals, 1u);
}

TEST(WatchRun, ANamedProcessThatCannotBeReadIsAnErrorOnceAndTheRestIsWatched) {
  Fixture fx;
  StepClock clock;
  probe::Selection sel;
  sel.pids = {2030, 99999};
  Recorder sink;
  Outcome o = fx.watch(clock, sel, {1.0, 2u, 0}, sink);
  EXPECT_EQ(sink.errors, 1u);
  EXPECT_TRUE(o.errors);
  EXPECT_TRUE(o.seen_any);
  ASSERT_EQ(o.summary.ranks.size(), 1u);
  EXPECT_EQ(o.summary.ranks[0].pid, 2030);
}

TEST(WatchRun, NothingMatchingIsReportedAsNothingSeen) {
  Fixture fx;
  StepClock clock;
  probe::Selection sel;
  sel.match = [](const std::string&) { return false; };
  Recorder sink;
  Outcome o = fx.watch(clock, sel, {1.0, 2u, 0}, sink);
  EXPECT_FALSE(o.seen_any);
  EXPECT_FALSE(o.summary.any_finding);
  EXPECT_EQ(sink.indices.size(), 3u);
}

}  // namespace
}  // namespace gpubind::watch

namespace gpubind::watch {
namespace {

TEST(WatchRun, AStopSignalEndsTheWatchAtItsNextWaitWithTheIntervalsItHas) {
  Fixture fx;
  StepClock clock;
  Recorder sink;
  unsigned waits = 0;
  // SIGTERM arrives during the second wait: two samples judged, one interval, then the summary.
  Outcome o = fx.watch(clock, children_of_launcher(), {1.0, std::nullopt, 0}, sink, [&] { return ++waits == 2; });
  EXPECT_EQ(sink.indices, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(o.summary.intervals, 1u);
  EXPECT_EQ(o.summary.ranks.size(), 8u);
  EXPECT_FALSE(o.stopped);
}

}  // namespace
}  // namespace gpubind::watch
