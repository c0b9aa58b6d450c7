#pragma once
// A Binder that records what it was asked to do instead of doing it, and can be told to fail.
#include <string>
#include <vector>

#include "sys/binder.hpp"

namespace gpubind::testing {

class RecordingBinder : public sys::Binder {
 public:
  std::vector<std::string> calls;
  bool fail_affinity = false;
  bool fail_mempolicy = false;

  Status set_cpu_affinity(const CpuSet& cpus) override {
    calls.push_back("affinity " + cpus.to_list());
    if (fail_affinity) return Error{"sched_setaffinity", "Invalid argument"};
    return Ok{};
  }
  Status set_memory_policy(sys::MemMode mode, const CpuSet& nodes) override {
    const char* m = mode == sys::MemMode::bind ? "bind" : mode == sys::MemMode::interleave ? "interleave" : "preferred";
    calls.push_back(std::string("mempolicy ") + m + " " + nodes.to_list());
    if (fail_mempolicy) return Error{"set_mempolicy", "Operation not permitted"};
    return Ok{};
  }
  Status set_env(const std::string& name, const std::string& value) override {
    calls.push_back("env " + name + "=" + value);
    return Ok{};
  }
  sys::ExecFailure exec(const std::vector<std::string>& argv) override {
    calls.push_back("exec " + argv.at(0));
    return {127, "not really"};
  }
};

}  // namespace gpubind::testing
