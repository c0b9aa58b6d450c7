// The supervision rules of `gpubind launch` (bind/supervisor.hpp), one test per rule, driven by a
// scripted Spawner and a Clock that moves only when the supervisor waits: no process is started
// and no test sleeps.
#include "bind/supervisor.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <set>
#include <string>

namespace gpubind::bind {

namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

class FakeClock final : public sys::Clock {
 public:
  time_point now() const override { return m_now; }
  void sleep_for(Ms) const override { ADD_FAILURE() << "the supervisor never sleeps: it waits on the Spawner"; }
  void advance(Ms d) { m_now += d; }
  Ms elapsed() const { return std::chrono::duration_cast<Ms>(m_now - time_point()); }

 private:
  time_point m_now{};
};

// A scripted process: it exits with `code` (or is killed by `killed_by`) at `exit_at` (from the
// start of the test), and reacts to signals by `on_signal` (signal -> exit status after
// `reaction`; a signal not listed is ignored, SIGKILL always kills at once). `output` is what it
// writes to its stdout pipe at once; `holds_pipes` keeps its pipes open after it ended (a
// detached child of its own holds them).
struct Script {
  std::optional<Ms> exit_at;
  int code = 0;
  int killed_by = 0;
  bool holds_pipes = false;
  std::map<int, int> on_signal{{SIGTERM, 128 + SIGTERM}, {SIGINT, 128 + SIGINT}};
  Ms reaction = 0ms;
  std::string output;
  bool fail_to_start = false;
};

class FakeSpawner final : public sys::Spawner {
 public:
  struct Proc {
    Script script;
    pid_t pid = -1;
    bool ended = false;
    std::optional<Ms> ends_at;
    int code = 0, signal = 0;
    int out_fd = -1;
    std::string unread;
  };
  FakeSpawner(FakeClock& clock, std::vector<Script> scripts) : m_clock(clock), m_scripts(std::move(scripts)) {}

  Result<sys::Spawned> spawn(const sys::SpawnRequest& req) override {
    requests.push_back(req);
    size_t i = m_procs.size();
    if (i >= m_scripts.size()) return Error{"fake spawn", "no script for child " + std::to_string(i)};
    if (m_scripts[i].fail_to_start) return Error{"fork", "Resource temporarily unavailable"};
    Proc p;
    p.script = m_scripts[i];
    p.pid = pid_t(1000 + i);
    p.ends_at = p.script.exit_at;
    p.code = p.script.code;
    p.signal = p.script.killed_by;
    sys::Spawned s{p.pid};
    if (req.capture_output) {
      p.out_fd = s.out_fd = 100 + int(i) * 2;
      s.err_fd = 101 + int(i) * 2;
      open_fds.insert(s.out_fd);
      open_fds.insert(s.err_fd);
      p.unread = p.script.output;
    }
    m_procs.push_back(p);
    return s;
  }
  void signal_group(pid_t pgid, int sig) override {
    signals.push_back({m_clock.elapsed(), pgid, sig});
    Proc* p = find(pgid);
    if (!p || p->ended) return;
    if (sig == SIGKILL) {
      p->ends_at = m_clock.elapsed();
      p->signal = SIGKILL;
      return;
    }
    auto it = p->script.on_signal.find(sig);
    if (it == p->script.on_signal.end()) return;
    Ms at = m_clock.elapsed() + p->script.reaction;
    if (!p->ends_at || at < *p->ends_at) {
      p->ends_at = at;
      p->code = it->second > 128 ? 0 : it->second;
      p->signal = it->second > 128 ? it->second - 128 : 0;
    }
  }
  void forget_group(pid_t pgid) override { forgotten.push_back(pgid); }
  sys::SpawnEvents wait(const std::vector<int>& fds, std::optional<Ms> timeout) override {
    if (++m_waits > 10000) {
      ADD_FAILURE() << "the supervisor never stops waiting";
      std::abort();
    }
    sys::SpawnEvents ev;
    for (int fd : fds) {
      // Readable: output not yet read, or end of file once the process ended (and nothing of
      // its own holds the pipe).
      Proc* p = by_fd(fd);
      if (open_fds.count(fd) && p && ((fd == p->out_fd && !p->unread.empty()) || (p->ended && !p->script.holds_pipes)))
        ev.readable.push_back(fd);
    }
    if (!ev.readable.empty()) return ev;
    // Else time moves to the next thing that happens: a signal to launch, a process's end, or
    // the timeout.
    std::optional<Ms> next = timeout ? std::optional<Ms>(m_clock.elapsed() + *timeout) : std::nullopt;
    for (const Proc& p : m_procs)
      if (!p.ended && p.ends_at && (!next || *p.ends_at < *next)) next = *p.ends_at;
    if (pending_signal && (!next || pending_signal->first < *next)) next = pending_signal->first;
    if (!next) {
      ADD_FAILURE() << "the supervisor waits for ever with nothing left to happen";
      std::abort();
    }
    m_clock.advance(*next - m_clock.elapsed());
    if (pending_signal && pending_signal->first <= m_clock.elapsed()) {
      ev.signals.push_back(pending_signal->second);
      pending_signal.reset();
    }
    for (Proc& p : m_procs)
      if (!p.ended && p.ends_at && *p.ends_at <= m_clock.elapsed()) {
        p.ended = true;
        ev.exits.push_back({p.pid, p.signal ? 0 : p.code, p.signal});
      }
    return ev;
  }
  std::string read_some(int fd) override {
    Proc* p = by_fd(fd);
    if (!p || fd != p->out_fd) return "";
    std::string s = std::move(p->unread);
    p->unread.clear();
    return s;
  }
  void close_fd(int fd) override {
    open_fds.erase(fd);
    closed.push_back(fd);
  }

  struct Sent {
    Ms at;
    pid_t pgid;
    int sig;
  };
  std::vector<sys::SpawnRequest> requests;
  std::vector<Sent> signals;
  std::vector<pid_t> forgotten;
  std::set<int> open_fds;
  std::vector<int> closed;
  std::optional<std::pair<Ms, int>> pending_signal;  // a signal launch receives at this time

  std::vector<Sent> sent(int sig) const {
    std::vector<Sent> out;
    for (const Sent& s : signals)
      if (s.sig == sig) out.push_back(s);
    return out;
  }

 private:
  Proc* find(pid_t pid) {
    for (Proc& p : m_procs)
      if (p.pid == pid) return &p;
    return nullptr;
  }
  Proc* by_fd(int fd) {
    for (Proc& p : m_procs)
      if (fd == p.out_fd || fd == p.out_fd + 1) return &p;
    return nullptr;
  }
  FakeClock& m_clock;
  std::vector<Script> m_scripts;
  std::vector<Proc> m_procs;
  unsigned m_waits = 0;
};

std::vector<RankStart> ranks(unsigned n, bool capture = false, FILE* console = nullptr) {
  std::vector<RankStart> out(n);
  for (unsigned i = 0; i < n; ++i) {
    out[i].local_rank = i;
    out[i].global_rank = 8 + i;
    out[i].request.argv = {"worker", std::to_string(i)};
    out[i].request.capture_output = capture;
    out[i].out.console = console;
  }
  return out;
}

Script exits(Ms at, int code) {
  Script s;
  s.exit_at = at;
  s.code = code;
  return s;
}

struct Supervised {
  FakeClock clock;
  std::unique_ptr<FakeSpawner> spawner;
  LaunchResult result;
  Supervised(std::vector<Script> scripts, Ms grace, std::optional<std::pair<Ms, int>> signal_to_launch = std::nullopt,
      bool tag = false, FILE* console = nullptr) {
    spawner = std::make_unique<FakeSpawner>(clock, scripts);
    spawner->pending_signal = signal_to_launch;
    FILE* diag = std::tmpfile();
    result = Supervisor(*spawner, clock, grace, tag, diag).run(ranks(unsigned(scripts.size()), console != nullptr, console));
    std::fclose(diag);
  }
};

}  // namespace

TEST(Supervisor, StatusIsZeroWhenEveryRankSucceeds) {
  Supervised r({exits(1s, 0), exits(3s, 0)}, 10s);
  EXPECT_EQ(r.result.exit_code, 0);
  EXPECT_FALSE(r.result.first_failure.has_value());
  ASSERT_EQ(r.result.ranks.size(), 2u);
  EXPECT_EQ(r.result.ranks[1].global_rank, 9u);
  EXPECT_DOUBLE_EQ(r.result.ranks[1].wall_seconds, 3.0);
  EXPECT_TRUE(r.spawner->sent(SIGTERM).empty());
  EXPECT_EQ(r.clock.elapsed(), 3s);  // it returned when the last rank ended, not later
}

TEST(Supervisor, FailFastTerminatesTheOtherRanks) {
  Supervised r({exits(100s, 0), exits(2s, 3), exits(100s, 0)}, 10s);
  EXPECT_EQ(r.result.exit_code, 3);  // the first failure's status, not the terminated ranks'
  EXPECT_EQ(r.result.first_failure, 1u);
  auto terms = r.spawner->sent(SIGTERM);
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0].at, 2s);
  EXPECT_EQ(terms[0].pgid, 1000);
  EXPECT_EQ(terms[1].pgid, 1002);
  EXPECT_EQ(r.result.ranks[0].exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.result.ranks[0].signal, SIGTERM);
  EXPECT_TRUE(r.spawner->sent(SIGKILL).size() == 3u);  // each rank's group, as it ends
  EXPECT_EQ(r.clock.elapsed(), 2s);
}

TEST(Supervisor, FailFastCountsAKilledRankAsAFailure) {
  Script oom = exits(1s, 0);
  oom.killed_by = SIGKILL;  // the OOM killer: status 128+9, as a shell reports it
  Supervised r({exits(50s, 0), oom}, 10s);
  EXPECT_EQ(r.result.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.result.first_failure, 1u);
  EXPECT_EQ(r.result.ranks[1].signal, SIGKILL);
  EXPECT_EQ(r.spawner->sent(SIGTERM).size(), 1u);
}

TEST(Supervisor, GraceThenSigkillForARankThatIgnoresSigterm) {
  Script stubborn;
  stubborn.on_signal.clear();  // ignores SIGTERM
  Supervised r({exits(1s, 7), stubborn}, 5s);
  EXPECT_EQ(r.result.exit_code, 7);
  auto kills = r.spawner->sent(SIGKILL);
  // Rank 0's own group when it ended, then rank 1 when the grace ran out: 1 s + 5 s.
  ASSERT_EQ(kills.size(), 3u);
  EXPECT_EQ(kills[1].pgid, 1001);
  EXPECT_EQ(kills[1].at, 6s);
  EXPECT_EQ(r.result.ranks[1].exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.clock.elapsed(), 6s);
}

TEST(Supervisor, GraceIsNotWaitedWhenRanksStopInTime) {
  Script slow;
  slow.reaction = 2s;  // stops 2 s after SIGTERM, within the 5 s grace
  Supervised r({exits(1s, 1), slow}, 5s);
  EXPECT_EQ(r.result.ranks[1].exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.clock.elapsed(), 3s);
  for (const auto& k : r.spawner->sent(SIGKILL)) EXPECT_NE(k.at, 6s);
}

TEST(Supervisor, ForwardsASignalToEveryRankAndReportsIt) {
  Supervised r({exits(100s, 0), exits(100s, 0)}, 10s, std::pair{4s, SIGINT});
  EXPECT_EQ(r.result.forwarded_signal, SIGINT);
  EXPECT_EQ(r.result.exit_code, 128 + SIGINT);
  EXPECT_FALSE(r.result.first_failure.has_value());  // ranks stopped by launch's signal are not failures
  auto ints = r.spawner->sent(SIGINT);
  ASSERT_EQ(ints.size(), 2u);
  EXPECT_EQ(ints[0].at, 4s);
  EXPECT_EQ(ints[1].pgid, 1001);
}

TEST(Supervisor, ForwardedSignalIsFollowedByGrace) {
  Script deaf;
  deaf.on_signal.clear();
  Supervised r({deaf}, 2s, std::pair{1s, SIGHUP});
  EXPECT_EQ(r.spawner->sent(SIGHUP).size(), 1u);
  ASSERT_FALSE(r.spawner->sent(SIGKILL).empty());
  EXPECT_EQ(r.spawner->sent(SIGKILL)[0].at, 3s);
  EXPECT_EQ(r.result.exit_code, 128 + SIGHUP);
}

TEST(Supervisor, ARankThatCannotStartFailsTheJobAndLaterRanksNeverStart) {
  Script cannot;
  cannot.fail_to_start = true;
  Supervised r({exits(100s, 0), cannot, exits(100s, 0)}, 10s);
  EXPECT_EQ(r.result.exit_code, 125);
  EXPECT_EQ(r.result.first_failure, 1u);
  EXPECT_EQ(r.spawner->requests.size(), 2u);  // rank 2 was never asked for
  EXPECT_FALSE(r.result.ranks[1].started);
  EXPECT_FALSE(r.result.ranks[2].started);
  ASSERT_EQ(r.spawner->sent(SIGTERM).size(), 1u);
  EXPECT_EQ(r.spawner->sent(SIGTERM)[0].pgid, 1000);
}

TEST(Supervisor, EveryEndedRanksGroupIsKilledAndForgotten) {
  Supervised r({exits(1s, 0), exits(2s, 0)}, 10s);
  EXPECT_EQ(r.spawner->forgotten, (std::vector<pid_t>{1000, 1001}));
  auto kills = r.spawner->sent(SIGKILL);
  ASSERT_EQ(kills.size(), 2u);
  EXPECT_EQ(kills[0].at, 1s);
}

TEST(Supervisor, OutputLinesAreTaggedWithTheGlobalRankAndTheTailIsFlushed) {
  char* text = nullptr;
  size_t len = 0;
  FILE* console = open_memstream(&text, &len);
  Script a = exits(1s, 0);
  a.output = "hello\nno newline";
  Supervised r({a}, 10s, std::nullopt, true, console);
  std::fclose(console);
  EXPECT_EQ(std::string(text, len), "[8] hello\n[8] no newline\n");
  std::free(text);
  EXPECT_EQ(r.spawner->open_fds.size(), 0u);  // both pipes closed
}

TEST(Supervisor, APipeHeldOpenAfterTheRankEndedIsClosedAfterTheDrainTime) {
  // The rank's pipes never reach end of file (a detached child holds them): only the drain limit
  // closes them, and what the rank wrote is still shown.
  char* text = nullptr;
  size_t len = 0;
  FILE* console = open_memstream(&text, &len);
  Script detached = exits(1s, 0);
  detached.holds_pipes = true;
  detached.output = "last words";
  Supervised r({detached}, 10s, std::nullopt, false, console);
  std::fclose(console);
  EXPECT_EQ(std::string(text, len), "last words\n");
  std::free(text);
  EXPECT_EQ(r.clock.elapsed(), 1s + kDrainAfterExit);
  EXPECT_TRUE(r.spawner->open_fds.empty());
}

}  // namespace gpubind::bind
