#pragma once
// A Binder that records what it was asked to do instead of doing it, and can be told to fail.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sys/binder.hpp"

namespace gpubind::testing {

class RecordingBinder : public sys::Binder {
 public:
  std::vector<std::string> calls;
  bool fail_affinity = false;
  bool fail_mempolicy = false;    // set_mempolicy fails: Invalid argument
  bool refuse_mempolicy = false;  // ... refused as a container's seccomp profile refuses it: EPERM
  std::string fail_env;  // set_env of this variable fails
  std::map<std::string, std::string> env;  // the environment set_env and unset_env change

  Status set_cpu_affinity(const CpuSet& cpus) override {
    calls.push_back("affinity " + cpus.to_list());
    if (fail_affinity) return Error{"sched_setaffinity", "Invalid argument"};
    return Ok{};
  }
  Status set_memory_policy(sys::MemMode mode, const CpuSet& nodes) override {
    const char* m = mode == sys::MemMode::bind ? "bind" : mode == sys::MemMode::interleave ? "interleave" : "preferred";
    calls.push_back(std::string("mempolicy ") + m + " " + nodes.to_list());
    if (fail_mempolicy) return Error{"set_mempolicy", "Invalid argument"};
    if (refuse_mempolicy) return Error{"set_mempolicy", "Operation not permitted", ErrorKind::permission};
    return Ok{};
  }
  Status reset_memory_policy() override {
    calls.push_back("mempolicy default");
    return Ok{};
  }
  Status set_env(const std::string& name, const std::string& value) override {
    calls.push_back("env " + name + "=" + value);
    if (name == fail_env) return Error{"setenv " + name, "Cannot allocate memory"};
    env[name] = value;
    return Ok{};
  }
  std::optional<std::string> get_env(const std::string& name) override {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  Status unset_env(const std::string& name) override {
    calls.push_back("unset " + name);
    env.erase(name);
    return Ok{};
  }
  sys::ExecFailure exec(const std::vector<std::string>& argv) override {
    calls.push_back("exec " + argv.at(0));
    return {127, "not really"};
  }
};

}  // namespace gpubind::testing
