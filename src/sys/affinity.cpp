#include "sys/affinity.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "sys/task_counters.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

Result<CpuSet> current_affinity() { return thread_affinity(0); }

Result<CpuSet> thread_affinity(int tid) {
  // The raw call returns how many bytes of mask the kernel wrote (nr_cpu_ids rounded up to a
  // long), and fails with EINVAL when the buffer is smaller than that: start at 1024 CPUs on the
  // stack (watch asks for every thread at every sample) and grow.
  static_assert(sizeof(unsigned long) == sizeof(uint64_t), "CPU masks are read as 64-bit words");
  uint64_t small[1024 / 64];
  std::vector<uint64_t> big;
  for (size_t words = std::size(small); words <= (size_t(1) << 20) / 64; words *= 2) {
    uint64_t* mask = small;
    if (words > std::size(small)) {
      big.assign(words, 0);
      mask = big.data();
    }
    long n = faultable("gpubind/sched_getaffinity", [&] { return ::syscall(SYS_sched_getaffinity, tid, words * 8, mask); });
    if (n >= 0) return CpuSet::from_words(mask, size_t(n) / 8);
    if (errno != EINVAL) return errno_error("sched_getaffinity", errno);
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

std::optional<std::pair<unsigned, unsigned>> current_cpu_apic_id() {
#if defined(__x86_64__) || defined(__i386__)
  for (int tries = 0; tries < 8; ++tries) {
    int before = ::sched_getcpu();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return std::nullopt;
    if (before >= 0 && ::sched_getcpu() == before) return std::pair<unsigned, unsigned>(unsigned(before), (ebx >> 24) & 0xff);
  }
#endif
  return std::nullopt;
}

}  // namespace gpubind::sys
