#include "cli/check_slurm_job.hpp"

#include "sys/command.hpp"
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

}  // namespace

Result<check::JobReport> check_slurm_job(const std::string& job, const std::vector<std::string>& pass) {
  if (!check::valid_job_id(job)) return Error{"--slurm-job " + job, "not a Slurm job id (digits, or an array task such as 123_4)", ErrorKind::usage};
  auto q = sys::run_command({"squeue", "--noheader", "--jobs=" + job, "--format=%D|%T"}, std::chrono::seconds(60));
  if (!q) return Error{"--slurm-job " + job, "squeue: " + q.error().why};
  if (q->exit_code != 0) return Error{"--slurm-job " + job, "squeue exited " + std::to_string(q->exit_code) + ": " + first_line(q->err)};
  auto nodes = check::job_node_count(job, q->out);
  if (!nodes) return nodes.error();
  std::string self = sys::executable_path();
  if (self.empty()) return Error{"--slurm-job " + job, "this gpubind's own path (/proc/self/exe) cannot be read for srun to run it"};
  auto s = sys::run_command(check::fanout_command(job, *nodes, self, pass), std::chrono::seconds(300));
  if (!s) return Error{"--slurm-job " + job, "srun: " + s.error().why};
  check::JobReport rep = check::merge_node_rows(job, *nodes, s->out);
  // A node's check exits 3 for its findings, which are in its lines; any other failure is srun's
  // or a node's and is said.
  if (s->exit_code != 0 && s->exit_code != kExitCheckFindings && !s->err.empty())
    rep.errors.push_back("srun exited " + std::to_string(s->exit_code) + ": " + first_line(s->err));
  return rep;
}

}  // namespace gpubind::cli
