#pragma once
// `watch --enforce`: keeping a job where its plan puts it. At each sample, a thread of a rank
// allowed CPUs outside the rank's target is put back (or, with --enforce=report, only reported),
// at most once per `gap_seconds` per rank, each action logged and counted, so that a library or a
// user fighting the binding shows up as a rising gpubind_rank_repins_total instead of a silent tug
// of war. Pure: the sample's states in, the repins to make out; rebind/move.hpp makes them.
//
// A rank's target: GPUBIND_CPUS where gpubind bound it (what it applied, as check's DRIFTED
// judges), else its CPUs in the rebind plan of the ranks seen (rebind.hpp), planned again when the
// set of processes changes. A plan refused (a rank or its GPU cannot be told) leaves the job
// alone, said once per reason. A thread allowed a part of its target only (NCCL pins its own
// threads) is no drift.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rebind/rebind.hpp"

namespace gpubind::rebind {

enum class RepinOutcome { planned, repinned, reported, already, gone, failed };
const char* to_string(RepinOutcome o);

struct Repin {
  int pid = 0;
  int tid = 0;
  std::string comm;        // the thread's
  int rank_pid = 0;        // the rank's own process (its threads, and those of the processes under it)
  std::string local_rank;  // as its launcher set it, or ""
  CpuSet from, to;         // allowed before; the rank's target
  std::string target;      // where the target came from: "GPUBIND_CPUS", "plan"
  RepinOutcome outcome = RepinOutcome::planned;
  std::string error;       // with failed, or why gone
  std::optional<uint64_t> start_time;  // the process's, as sampled: which process the PID was
};

struct EnforceOptions {
  bool act = true;          // false: --enforce=report
  double gap_seconds = 10;  // per rank, between two rounds of repins
  Options plan = {};
};

class Enforcer {
 public:
  explicit Enforcer(EnforceOptions o) : m_o(std::move(o)) {}
  // The repins this sample calls for (outcome planned, or reported with act false). `now`:
  // seconds on the watch's clock.
  std::vector<Repin> decide(const topo::Topology& t, const std::vector<probe::ProcessState>& states,
                            const std::map<int, CpuSet>& cgroup_cpus, double now);
  // Counts what was done (repinned, or reported), by rank: one event per rank per round. A
  // reported thread is not reported (nor counted) again while it stays off its CPUs as it was.
  void record(const std::vector<Repin>& done);
  // Rounds of repins (or reported drifts) per rank's PID since the watch started.
  const std::map<int, uint64_t>& totals() const { return m_totals; }
  bool acts() const { return m_o.act; }
  // What to say once (a refused plan), taken.
  std::vector<std::string> take_notes();
  // Whether decide() will plan again for these states (their PIDs changed): the caller then reads
  // every process's cgroup CPUs for it.
  bool needs_plan(const std::vector<probe::ProcessState>& states) const;

 private:
  void replan(const topo::Topology& t, const std::vector<probe::ProcessState>& states, const std::map<int, CpuSet>& cgroup_cpus);

  struct Target {
    CpuSet cpus;
    int rank_pid = 0;
    std::string local_rank, source;
  };
  EnforceOptions m_o;
  std::set<int> m_planned_for;         // the PIDs of the sample the plan was made from
  std::map<int, Target> m_target;      // by PID
  std::map<int, double> m_last;        // rank PID -> when last acted on
  std::map<int, uint64_t> m_totals;
  std::map<int, CpuSet> m_reported;    // --enforce=report: tid -> the CPUs it was reported allowed
  std::set<std::string> m_said;
  std::vector<std::string> m_notes;
};

}  // namespace gpubind::rebind
