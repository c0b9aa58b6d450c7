#include "bind/supervisor.hpp"

#include <algorithm>
#include <csignal>
#include <utility>

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

using TimePoint = sys::Clock::time_point;

struct Rank {
  RankStart start;
  RankOutcome outcome;
  sys::Spawned proc;
  bool running = false;
  TimePoint started;
  TimePoint ended;  // when it was reaped
};

// Writes the complete lines of `s.pending` to the sink (the console copy prefixed with
// "[RANK] " when tagging); keeps the incomplete tail unless `final_flush`. The first line its log
// file refuses (a full disk) is said on `diag`, once; every refused byte is counted.
void emit_lines(Sink& s, bool tag, unsigned rank, bool final_flush, FILE* diag, const char* stream) {
  std::string& buf = s.pending;
  size_t start = 0;
  auto emit = [&](std::string_view line) {
    if (s.file >= 0) {
      std::string with_newline = std::string(line) + "\n";
      if (Status w = sys::write_all(s.file, with_newline); !w) {
        if (s.lost == 0) {
          s.error = w.error().why;
          std::fprintf(diag, "gpubind: warning: rank %u: its %s log refuses output (%s): what it writes there is lost until the disk has room; the summary counts it\n",
                       rank, stream, one_line(s.error).c_str());
        }
        s.lost += with_newline.size();
      }
    }
    if (!s.console) return;
    if (tag) std::fprintf(s.console, "[%u] ", rank);
    std::fwrite(line.data(), 1, line.size(), s.console);
    std::fputc('\n', s.console);
  };
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    emit(std::string_view(buf).substr(start, nl - start));
    start = nl + 1;
  }
  buf.erase(0, start);
  if (final_flush && !buf.empty()) {
    emit(buf);
    buf.clear();
  }
  if (s.console) std::fflush(s.console);
}

}  // namespace

LaunchResult Supervisor::run(std::vector<RankStart> starts) {
  std::vector<Rank> ranks(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    ranks[i].start = std::move(starts[i]);
    ranks[i].outcome.local_rank = ranks[i].start.local_rank;
    ranks[i].outcome.global_rank = ranks[i].start.global_rank;
  }
  LaunchResult result;

  auto signal_running = [&](int sig) {
    for (Rank& r : ranks)
      if (r.running) m_spawner.signal_group(r.proc.pid, sig);
  };
  // Stopping: ranks got SIGTERM (or a forwarded signal) and have until kill_at to end.
  enum class Stop { none, grace, killed } stop = Stop::none;
  TimePoint kill_at;
  auto stop_all = [&](int sig) {
    signal_running(sig);
    if (stop != Stop::none) return;
    stop = Stop::grace;
    kill_at = m_clock.now() + m_grace;
  };
  // The first failure stops the job; ranks ending after launch forwarded a signal were stopped,
  // they did not fail.
  auto fail = [&](Rank& r) {
    if (result.first_failure || result.forwarded_signal) return;
    result.first_failure = r.outcome.local_rank;
    result.exit_code = r.outcome.exit_code;
    stop_all(SIGTERM);
  };
  auto close_pipe = [&](Rank& r, bool is_err) {
    int& fd = is_err ? r.proc.err_fd : r.proc.out_fd;
    emit_lines(is_err ? r.start.err : r.start.out, m_tag, r.outcome.global_rank, true, m_diag, is_err ? "stderr" : "stdout");
    m_spawner.close_fd(fd);
    fd = -1;
  };

  // 1. Start every rank; a rank that cannot start fails the job like a rank that exits early.
  for (Rank& r : ranks) {
    r.started = m_clock.now();
    auto proc = m_spawner.spawn(r.start.request);
    if (!proc) {
      r.outcome.exit_code = 125;
      std::fprintf(m_diag, "gpubind: error: local rank %u: %s\n", r.outcome.local_rank, one_line(proc.error().message()).c_str());
      fail(r);
      break;
    }
    r.proc = *proc;
    r.running = true;
    r.outcome.started = true;
    r.outcome.pid = proc->pid;
  }

  // 2. Supervise until every rank has ended and its output is drained.
  auto anyone_left = [&] {
    return std::any_of(ranks.begin(), ranks.end(),
                       [](const Rank& r) { return r.running || r.proc.out_fd >= 0 || r.proc.err_fd >= 0; });
  };
  while (anyone_left()) {
    std::vector<int> fds;
    for (const Rank& r : ranks)
      for (int fd : {r.proc.out_fd, r.proc.err_fd})
        if (fd >= 0) fds.push_back(fd);
    std::optional<TimePoint> wake;
    auto wake_by = [&](TimePoint t) { wake = wake ? std::min(*wake, t) : t; };
    if (stop == Stop::grace) wake_by(kill_at);
    for (const Rank& r : ranks)
      if (!r.running && (r.proc.out_fd >= 0 || r.proc.err_fd >= 0)) wake_by(r.ended + kDrainAfterExit);
    std::optional<std::chrono::milliseconds> timeout;
    if (wake)
      timeout = std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(*wake - m_clock.now()));
    sys::SpawnEvents ev = m_spawner.wait(fds, timeout);

    for (int sig : ev.signals) {
      // Forwarded to every rank's group; ranks that do not stop within the grace period are killed.
      result.forwarded_signal = sig;
      stop_all(sig);
    }
    for (int fd : ev.readable)
      for (Rank& r : ranks)
        for (bool is_err : {false, true}) {
          if ((is_err ? r.proc.err_fd : r.proc.out_fd) != fd) continue;
          std::string chunk = m_spawner.read_some(fd);
          if (chunk.empty()) {
            close_pipe(r, is_err);
          } else {
            Sink& sink = is_err ? r.start.err : r.start.out;
            sink.pending += chunk;
            emit_lines(sink, m_tag, r.outcome.global_rank, false, m_diag, is_err ? "stderr" : "stdout");
          }
        }
    for (const sys::ChildExit& e : ev.exits) {
      auto it = std::find_if(ranks.begin(), ranks.end(), [&](const Rank& r) { return r.running && r.proc.pid == e.pid; });
      if (it == ranks.end()) continue;
      Rank& r = *it;
      r.running = false;
      r.ended = m_clock.now();
      r.outcome.wall_seconds = std::chrono::duration<double>(r.ended - r.started).count();
      r.outcome.signal = e.signal;
      r.outcome.exit_code = e.signal ? 128 + e.signal : e.exit_code;
      // Whatever the rank started in its group goes with it.
      m_spawner.signal_group(r.proc.pid, SIGKILL);
      m_spawner.forget_group(r.proc.pid);
      if (r.outcome.exit_code != 0) fail(r);
    }
    // A rank that ended kDrainAfterExit ago: its output is done, whoever still holds the pipe.
    for (Rank& r : ranks)
      if (!r.running && m_clock.now() >= r.ended + kDrainAfterExit)
        for (bool is_err : {false, true})
          if ((is_err ? r.proc.err_fd : r.proc.out_fd) >= 0) close_pipe(r, is_err);
    if (stop == Stop::grace && m_clock.now() >= kill_at) {
      signal_running(SIGKILL);
      stop = Stop::killed;  // from here only a child's end and output wake the loop
    }
  }
  for (Rank& r : ranks) {
    r.outcome.log_bytes_lost = r.start.out.lost + r.start.err.lost;
    r.outcome.log_error = !r.start.out.error.empty() ? r.start.out.error : r.start.err.error;
    result.ranks.push_back(r.outcome);
  }
  if (!result.first_failure && result.forwarded_signal) result.exit_code = 128 + result.forwarded_signal;
  return result;
}

}  // namespace gpubind::bind
