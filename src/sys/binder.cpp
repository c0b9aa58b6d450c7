#include "sys/binder.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "sys/mempolicy_abi.hpp"
#include "util/exit_status.hpp"

namespace gpubind::sys {

namespace {

long mempolicy(int mode, const std::vector<unsigned long>& mask, unsigned long maxnode) {
  return faultable("gpubind/set_mempolicy",
                   [&] { return ::syscall(SYS_set_mempolicy, mode, mask.empty() ? nullptr : mask.data(), maxnode); });
}

// set_mempolicy's failure, its kind saying whether the environment refused the call (EPERM or
// EACCES: a seccomp rule or a missing CAP_SYS_NICE; ENOSYS: a profile's default answer, or a
// kernel without NUMA) rather than the arguments being wrong.
Error mempolicy_error(const std::string& what, int e) {
  ErrorKind kind = e == EPERM || e == EACCES ? ErrorKind::permission : e == ENOSYS ? ErrorKind::unsupported : ErrorKind::failed;
  return Error{what, std::strerror(e), kind};
}

class RealBinder final : public Binder {
 public:
  Status set_cpu_affinity(const CpuSet& cpus) override {
    if (cpus.empty()) return Error{"sched_setaffinity", "empty CPU set"};
    size_t ncpus = *cpus.last() + 1;
    size_t bytes = CPU_ALLOC_SIZE(ncpus);
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (!set) return Error{"sched_setaffinity", "out of memory"};
    CPU_ZERO_S(bytes, set);
    for (unsigned c : cpus.ids()) CPU_SET_S(c, bytes, set);
    int rc = faultable("gpubind/sched_setaffinity", [&] { return ::sched_setaffinity(0, bytes, set); });
    int e = errno;
    CPU_FREE(set);
    if (rc != 0) return Error{"sched_setaffinity " + cpus.to_list(), std::strerror(e)};
    return Ok{};
  }

  Status set_memory_policy(MemMode mode, const CpuSet& nodes) override {
    if (nodes.empty()) return Error{"set_mempolicy", "no NUMA node given"};
    unsigned long maxnode = *nodes.last() + 2;  // the kernel ignores the last bit it is given
    std::vector<unsigned long> mask((maxnode + 8 * sizeof(unsigned long) - 1) / (8 * sizeof(unsigned long)), 0);
    for (unsigned n : nodes.ids()) mask[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
    int m = mode == MemMode::bind ? mempolicy_abi::kBind : mode == MemMode::interleave ? mempolicy_abi::kInterleave : mempolicy_abi::kPreferred;
    if (mode == MemMode::preferred && nodes.count() > 1) {
      // Several preferred nodes need MPOL_PREFERRED_MANY; older kernels prefer the first node only.
      if (mempolicy(mempolicy_abi::kPreferredMany, mask, maxnode) == 0) return Ok{};
      if (errno != EINVAL) return mempolicy_error("set_mempolicy preferred-many " + nodes.to_list(), errno);
      std::vector<unsigned long> first(mask.size(), 0);
      unsigned n = *nodes.first();
      first[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
      mask = first;
    }
    if (mempolicy(m, mask, maxnode) != 0)
      return mempolicy_error("set_mempolicy " + nodes.to_list(), errno);
    return Ok{};
  }

  Status reset_memory_policy() override {
    if (mempolicy(mempolicy_abi::kDefault, {}, 0) != 0) return Error{"set_mempolicy default", std::strerror(errno)};
    return Ok{};
  }

  Status set_env(const std::string& name, const std::string& value) override {
    if (faultable("gpubind/setenv", [&] { return ::setenv(name.c_str(), value.c_str(), 1); }) != 0)
      return Error{"setenv " + name, std::strerror(errno)};
    return Ok{};
  }

  std::optional<std::string> get_env(const std::string& name) override {
    const char* v = ::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  }

  Status unset_env(const std::string& name) override {
    if (::unsetenv(name.c_str()) != 0) return Error{"unsetenv " + name, std::strerror(errno)};
    return Ok{};
  }

  ExecFailure exec(const std::vector<std::string>& argv) override { return exec_command(argv); }
};

Result<CpuSet> read_cpu_list(const FsRoot& root, const std::string& rel) {
  auto text = root.read(rel);
  if (!text) return text.error();
  auto set = CpuSet::parse_list(*text);
  if (!set) return Error{root.path_of(rel), set.error().message()};
  return *set;
}

}  // namespace

std::unique_ptr<Binder> real_binder() { return std::make_unique<RealBinder>(); }

ExecFailure exec_command(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  faultable("gpubind/execvp", [&] { return ::execvp(args[0], args.data()); });
  int e = errno;
  ExecFailure f;
  f.exit_code = (e == ENOENT || e == ENOTDIR) ? kExitNotFound : kExitNotExecutable;
  f.message = argv[0] + ": " + (e == ENOENT ? std::string("command not found") : std::string(std::strerror(e)));
  return f;
}

Result<CpuSet> online_cpus(const FsRoot& root) { return read_cpu_list(root, "sys/devices/system/cpu/online"); }

Result<CpuSet> online_numa_nodes(const FsRoot& root) {
  if (!root.exists("sys/devices/system/node/online")) return CpuSet::of({0});
  return read_cpu_list(root, "sys/devices/system/node/online");
}

}  // namespace gpubind::sys
