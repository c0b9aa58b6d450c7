#include "sys/node_memory.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "sys/mempolicy_abi.hpp"

namespace gpubind::sys {

Result<Mapping> memory_on_node(size_t bytes, unsigned node) {
  std::string what = "memory on NUMA node " + std::to_string(node);
  if (bytes == 0 || node >= 4096) return Error{what, "no such size or node"};
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Error{what, std::string("mmap: ") + std::strerror(errno)};
  std::vector<unsigned long> mask(node / (8 * sizeof(unsigned long)) + 1, 0);
  mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  if (::syscall(SYS_mbind, p, bytes, mempolicy_abi::kBind, mask.data(), mask.size() * 8 * sizeof(unsigned long) + 1, mempolicy_abi::kMfStrict) != 0) {
    int e = errno;
    ::munmap(p, bytes);
    return Error{what, std::string("mbind: ") + std::strerror(e)};
  }
  std::memset(p, 0x5a, bytes);  // fault every page in, on that node
  return Mapping(p, bytes);
}

Mapping::Mapping(Mapping&& other) noexcept : m_data(other.m_data), m_size(other.m_size) {
  other.m_data = nullptr;
  other.m_size = 0;
}

Mapping::~Mapping() {
  if (m_data) ::munmap(m_data, m_size);
}

Result<std::map<unsigned, uint64_t>> page_nodes(const void* addr, size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  auto first = reinterpret_cast<uintptr_t>(addr) / page * page;
  auto end = reinterpret_cast<uintptr_t>(addr) + bytes;
  std::map<unsigned, uint64_t> out;
  constexpr size_t kBatch = 1024;  // pages asked about per call
  std::vector<void*> pages;
  std::vector<int> status;
  for (uintptr_t at = first; at < end;) {
    pages.clear();
    for (; at < end && pages.size() < kBatch; at += page) pages.push_back(reinterpret_cast<void*>(at));
    status.assign(pages.size(), -1);
    // nodes == NULL: only report where each page is (status: its node, or -errno).
    if (::syscall(SYS_move_pages, 0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0)
      return Error{"move_pages", std::strerror(errno)};
    for (int s : status)
      if (s >= 0) out[unsigned(s)]++;
  }
  return out;
}

}  // namespace gpubind::sys
