#pragma once
// The supervision rules of `gpubind launch`, over a Spawner and a Clock (sys/spawner.hpp,
// sys/clock.hpp) so each rule is unit-tested with fakes:
//   start     ranks start in order; one that cannot start fails the job like a rank that exits
//             early (exit 125), and the ranks after it never start;
//   fail-fast the first rank that ends with a non-zero status, or is killed, fails the job: every
//             other rank's process group gets SIGTERM;
//   grace     ranks still running `grace` after the SIGTERM get SIGKILL;
//   forward   SIGINT, SIGTERM or SIGHUP sent to launch goes to every rank's group, then grace;
//   status    the job's exit status is the first failing rank's (128+signal when killed), else
//             128+the forwarded signal, else 0; a rank that ends after launch forwarded a signal
//             was stopped, it did not fail;
//   groups    whatever a rank started in its group is SIGKILLed when the rank ends;
//   output    captured lines go to the console (prefixed "[RANK] " when tagged) and/or a log
//             file; a rank's pipes are read until end of file or kDrainAfterExit after it ended.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "sys/clock.hpp"
#include "sys/spawner.hpp"

namespace gpubind::bind {

struct RankOutcome {
  unsigned local_rank = 0;
  unsigned global_rank = 0;
  int pid = -1;
  int exit_code = 0;  // the rank's status as a shell reports it: code, or 128+signal
  int signal = 0;
  bool started = false;
  double wall_seconds = 0;
  uint64_t log_bytes_lost = 0;  // output its log files refused (stdout and stderr)
  std::string log_error;        // the first refusal's reason
};

struct LaunchResult {
  int exit_code = 0;                      // the first failing rank's, else 0
  unsigned restarts = 0;                  // worker-group restarts that were made
  std::optional<unsigned> first_failure;  // local rank
  int forwarded_signal = 0;               // a signal launch received and passed on
  std::vector<RankOutcome> ranks;
};

// Where one captured stream of a rank goes: the console (tagged or not) and/or a log file.
struct Sink {
  FILE* console = nullptr;  // nullptr: redirected to the file only
  int file = -1;            // a log file (owned by the caller), or -1
  std::string pending;      // an incomplete last line
  uint64_t lost = 0;        // bytes the log file refused (a full disk); tried again with each line
  std::string error;        // why, the first time
};

struct RankStart {
  unsigned local_rank = 0;
  unsigned global_rank = 0;
  sys::SpawnRequest request;  // capture_output is set when a sink needs the pipes
  Sink out, err;
};

// How long a rank's output is still read after it ended: what it wrote just before exiting is
// in the pipe, but a process it detached (setsid, a daemon) may hold the pipe open for ever.
constexpr std::chrono::milliseconds kDrainAfterExit{500};

class Supervisor {
 public:
  Supervisor(sys::Spawner& spawner, const sys::Clock& clock, std::chrono::milliseconds grace, bool tag_output,
             FILE* diagnostics = stderr)
      : m_spawner(spawner), m_clock(clock), m_grace(grace), m_tag(tag_output), m_diag(diagnostics) {}
  // Starts the ranks and returns when every one has ended and its output is drained.
  LaunchResult run(std::vector<RankStart> ranks);

 private:
  sys::Spawner& m_spawner;
  const sys::Clock& m_clock;
  std::chrono::milliseconds m_grace;
  bool m_tag;
  FILE* m_diag;
};

}  // namespace gpubind::bind
