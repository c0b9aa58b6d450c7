#include "sys/affinity.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

Result<CpuSet> current_affinity() {
  // Start at 1024 CPUs and grow: sched_getaffinity fails with EINVAL when the mask is smaller
  // than the kernel's.
  for (size_t ncpus = 1024; ncpus <= (1u << 20); ncpus *= 2) {
    size_t bytes = CPU_ALLOC_SIZE(ncpus);
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (!set) return Error{"sched_getaffinity", "out of memory"};
    if (faultable("gpubind/sched_getaffinity", [&] { return ::sched_getaffinity(0, bytes, set); }) == 0) {
      CpuSet out;
      for (size_t i = 0; i < ncpus; ++i)
        if (CPU_ISSET_S(i, bytes, set)) out.set(unsigned(i));
      CPU_FREE(set);
      return out;
    }
    int e = errno;
    CPU_FREE(set);
    if (e != EINVAL) return Error{"sched_getaffinity", std::strerror(e)};
  }
  return Error{"sched_getaffinity", "CPU mask larger than 1M CPUs"};
}

Result<CpuSet> current_mems_allowed() {
  auto status = read_file("/proc/self/status");
  if (!status) return status.error();
  std::string list = key_value(*status, "Mems_allowed_list");
  if (list.empty()) return Error{"/proc/self/status", "no Mems_allowed_list"};
  auto nodes = CpuSet::parse_list(list);
  if (!nodes) return Error{"/proc/self/status Mems_allowed_list", nodes.error().message()};
  return *nodes;
}

}  // namespace gpubind::sys
