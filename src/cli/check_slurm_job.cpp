#include "cli/check_slurm_job.hpp"

#include "sys/process.hpp"
#include "sys/module.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

namespace {

// The first line of what a command said on stderr, for an error.
std::string first_line(const std::string& err) {
  std::string_view t = trim(err);
  return one_line(t.substr(0, t.find('\n')));
}

struct Relayed {
  unsigned nodes = 0;
  sys::CommandResult srun;
};

// `gpubind COMMAND... --slurm-node JOBID PASS...` on every node of the running job, through srun.
Result<Relayed> run_on_job_nodes(const std::string& job, const std::string& command, const std::vector<std::string>& pass,
                                 std::chrono::seconds deadline) {
  std::string what = "--slurm-job " + job;
  if (!check::valid_job_id(job)) return Error{what, "not a Slurm job id (digits, or an array task such as 123_4)", ErrorKind::usage};
  // --array: one line per task of an array, not the array's summary line of pending tasks.
  auto q = sys::run_command({"squeue", "--noheader", "--array", "--jobs=" + job, "--format=%A|%i|%D|%T"}, std::chrono::seconds(60));
  if (!q) return Error{what, "squeue: " + q.error().why};
  if (q->exit_code != 0) return Error{what, "squeue exited " + std::to_string(q->exit_code) + ": " + first_line(q->err)};
  auto found = check::squeue_job(job, q->out);
  if (!found) return found.error();
  std::string self = sys::executable_path();
  if (self.empty()) return Error{what, "this gpubind's own path (/proc/self/exe) cannot be read for srun to run it"};
  std::vector<std::string> argv = {command, "--slurm-node", found->id};
  argv.insert(argv.end(), pass.begin(), pass.end());
  auto s = sys::run_command(check::fanout_command(found->id, found->nodes, self, argv), deadline);
  if (!s) return Error{what, "srun: " + s.error().why};
  return Relayed{found->nodes, std::move(*s)};
}

// A node's command exits 3 for its findings, which are in its lines; any other failure is srun's
// or a node's and is said.
void srun_failure(const sys::CommandResult& srun, std::vector<std::string>& errors) {
  if (srun.exit_code != 0 && srun.exit_code != kExitCheckFindings && !srun.err.empty())
    errors.push_back("srun exited " + std::to_string(srun.exit_code) + ": " + first_line(srun.err));
}

}  // namespace

Result<check::JobReport> check_slurm_job(const std::string& job, const std::vector<std::string>& pass) {
  auto r = run_on_job_nodes(job, "check", pass, std::chrono::seconds(300));
  if (!r) return r.error();
  check::JobReport rep = check::merge_node_rows(job, r->nodes, r->srun.out);
  srun_failure(r->srun, rep.errors);
  return rep;
}

Result<check::JobWatchReport> watch_slurm_job(const std::string& job, const std::vector<std::string>& pass,
                                              std::chrono::seconds expected) {
  auto r = run_on_job_nodes(job, "watch", pass, expected + std::chrono::seconds(300));
  if (!r) return r.error();
  check::JobWatchReport rep = check::merge_watch_summaries(job, r->nodes, r->srun.out);
  srun_failure(r->srun, rep.errors);
  return rep;
}

}  // namespace gpubind::cli
