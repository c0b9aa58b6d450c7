#pragma once
// Renderings of a check::Report: a table with one line per process (and per thread with
// verbose), the findings' reasons, and JSON. Names and values read from a process (its name,
// its threads' names, its environment) are shown escaped: a name holding a terminal escape or a
// newline is text, not a command to the terminal.
#include <nlohmann/json.hpp>
#include <string>

#include "check/check.hpp"
#include "check/nccl_check.hpp"
#include "check/slurm_job.hpp"

namespace gpubind::render {

inline constexpr int kCheckSchemaVersion = 1;

std::string check_text(const check::Report& r, bool verbose);
// `node` and `time` (RFC 3339) make the record one that can leave the node: an epilog shipping
// them to a central store tells nodes and moments apart.
nlohmann::ordered_json check_json(const check::Report& r, const std::string& node, const std::string& time);

// `check --slurm-job`: one table for the job (node, PID, global and local rank, GPU, CPUs,
// verdict), each finding's reason, and a summary line; and its JSON.
std::string job_text(const check::JobReport& r);
nlohmann::ordered_json job_json(const check::JobReport& r);

// `watch --slurm-job`: the nodes' summaries as one table (node, PID, ranks, command, what was
// seen, the worst interval) and a summary line; and its JSON.
std::string job_watch_text(const check::JobWatchReport& r);
nlohmann::ordered_json job_watch_json(const check::JobWatchReport& r);

// `check --nccl-log`: one line per rank NCCL logged (host, PID, ranks, GPU, NCCL's version, the
// rank's CPUs at init, the set NCCL pinned, the plan's, the NICs used and planned, GPU Direct
// RDMA, verdict), each finding's reason and note, and a summary line; and its JSON. `compared`
// says what the plan was ("policy closest on example:dgx-h100").
std::string nccl_text(const check::NcclReport& r, const std::string& compared);
nlohmann::ordered_json nccl_json(const check::NcclReport& r, const std::string& policy, const std::string& topology);

}  // namespace gpubind::render
