#pragma once
// `gpubind check --slurm-job JOBID`: the node-local check of every node of a running job, run by
// Slurm itself (srun --overlap, one task per node), merged into one table with one exit status.
// Slurm does the fan-out; gpubind only merges. Pure: srun's command line, the lines each node
// prints, their merge.
#include <optional>
#include <string>
#include <vector>

#include "check/check.hpp"

namespace gpubind::check {

// One process of the job as its node reported it.
struct JobRow {
  std::string node;
  int pid = 0;
  std::string rank, local_rank;  // "" when no launcher variable says
  std::string gpus;              // what it was judged against, ","-joined; "" when none
  std::string cpus;              // its allowed CPUs now
  std::string verdict;           // verdicts_of(): "OK", "NO_GPU", "DRIFTED,OVERLAP"...
  std::string reason;            // every finding's reason, joined by "; "; "" when OK
};

struct JobReport {
  std::string job;
  unsigned nodes_expected = 0;
  std::vector<std::string> nodes;   // the nodes that answered, in the order they did
  std::vector<JobRow> rows;         // by node, then PID
  std::vector<std::string> errors;  // a node's unreadable processes, srun's failure, nodes silent
  bool has_findings() const;        // a row judged and not OK
};

// A job id as squeue and srun take it: digits, or an array task "123_4".
bool valid_job_id(const std::string& job);

// What squeue says of the job ("%A|%i|%D|%T": job id, the id as squeue prints it, node count,
// state) as the job to check, or an Error saying why nothing can be checked (no such job, not
// RUNNING). An array task ("7_1", as squeue prints it) is the job of its own id ("8"), which srun
// and its tasks' SLURM_JOB_ID know it by; an array's id ("7") names several jobs and is refused
// with them named, never one of them checked silently.
struct SqueueJob {
  std::string id;  // the job id srun --jobid and --slurm-node take
  unsigned nodes = 0;
};
Result<SqueueJob> squeue_job(const std::string& job, const std::string& squeue_out);

// srun's command line: one task on each of the job's `nodes` nodes, beside the job's own steps
// (--overlap), running `gpubind COMMAND...` (`check --slurm-node JOBID` and check's flags to
// forward, or watch's).
std::vector<std::string> fanout_command(const std::string& job, unsigned nodes, const std::string& gpubind,
                                        const std::vector<std::string>& command);

// What `check --slurm-node` prints on a node: one line per process, tab-separated fields, one
// line per error, and a last line with the counts, so the merge knows the node answered whole.
std::string node_rows(const Report& r, const std::string& node);

// The job's report from the nodes' lines as srun relays them (interleaved line by line between
// nodes; anything else, such as srun's own messages, is ignored).
JobReport merge_node_rows(const std::string& job, unsigned nodes_expected, const std::string& out);

// `watch --slurm-job`: the summary each node's `watch --slurm-node JOBID --json` ends with (its
// line of type "summary"), merged. One row per rank process a node watched.
struct JobWatchRow {
  std::string node;
  int pid = 0;
  std::string rank, local_rank, comm;
  std::string seen;                       // its findings over the watch, ","-joined; "" when none
  std::optional<unsigned> worst_interval;
  bool exited = false;
};

struct JobWatchReport {
  std::string job;
  unsigned nodes_expected = 0;
  std::vector<std::string> nodes;   // whose summary came, in that order
  std::vector<JobWatchRow> rows;    // by node, then PID
  std::vector<std::string> errors;  // nodes without a summary
  bool any_finding = false;         // some node's summary says so
};

// The summaries come through srun, which sends a task's output in messages of at most 1024 bytes
// and writes each as it arrives (slurmstepd's io.c, MAX_MSG_LEN): a longer line from one node is
// cut and may be interleaved with another node's. So each node writes its summary (a JSON line)
// as numbered pieces, each a line far shorter than that: "gpubind-summary-piece NODE I N TEXT",
// tab-separated (watch --summary-pieces), and the merge puts each node's pieces back together.
// A whole summary line, as `watch --json` prints it, is taken too.
std::string summary_pieces(const std::string& node, const std::string& json_line);

JobWatchReport merge_watch_summaries(const std::string& job, unsigned nodes_expected, const std::string& out);

}  // namespace gpubind::check
