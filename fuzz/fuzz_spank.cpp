// What Slurm hands gpubind: the SPANK plugin's plugstack.conf arguments (one per line) and its
// --gpubind option (the last line), as slurmstepd hands them over; the step's and the task's GPU
// and binding variables (bind/slurm_step.hpp), taken from the first lines; and srun's relay of
// the nodes' lines for check --slurm-job (check/slurm_job.hpp), the whole input.
// Properties: each task's GPU row names positions in the step's GPUs, one row per task, and the
// task's own row is its own GPUs; the merge never counts more nodes than answered.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bind/slurm_step.hpp"
#include "bind/spank_args.hpp"
#include "check/slurm_job.hpp"
#include "fuzz_util.hpp"
#include "util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  for (std::string_view line : gpubind::split(text, '\n')) args.emplace_back(line);
  (void)gpubind::bind::parse_plugstack_args(args);
  if (!args.empty()) (void)gpubind::bind::parse_gpubind_option(args.back().c_str());
  (void)gpubind::bind::parse_gpubind_option(nullptr);

  if (args.size() >= 3) {
    unsigned tasks = 1 + unsigned(size % 9), id = unsigned(size % tasks);
    if (auto g = gpubind::bind::slurm_task_gpus(args[0], args[1], args[2], tasks, id)) {
      gpubind::fuzz::require(g->rows.size() == tasks, "one GPU row per task");
      for (const auto& row : g->rows)
        for (unsigned pos : row) gpubind::fuzz::require(pos < g->step_gpus, "a row names a position in the step's GPUs");
    }
    (void)gpubind::bind::user_cpu_binding({{"SLURM_CPU_BIND", args[0]}, {"SLURM_CPU_BIND_TYPE", args[1]}});
  }
  auto merged = gpubind::check::merge_node_rows("1", 2, text);
  gpubind::fuzz::require(merged.nodes.size() >= 2 || !merged.errors.empty(), "a silent node is an error");
  return 0;
}
