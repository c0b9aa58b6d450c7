#pragma once
// Anonymous memory and where its pages are: a mapping placed on one NUMA node with
// mbind(MPOL_BIND) and touched, so every page is resident on that node before anyone uses it
// (topo --measure copies from it to a GPU; the kernel refuses a node that does not exist or that
// this process's cpuset does not allow), and the node of each page of a range (bench).
#include <cstddef>
#include <cstdint>
#include <map>

#include "util/result.hpp"

namespace gpubind::sys {

// Anonymous memory this process mapped, unmapped when the Mapping goes: memory_on_node's, and
// shared_memory's (sys/shared_memory.hpp).
class Mapping {
 public:
  Mapping(void* data, size_t size) : m_data(data), m_size(size) {}  // adopts a region mmap returned
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&&) = delete;
  Mapping(const Mapping&) = delete;
  ~Mapping();
  void* data() const { return m_data; }
  size_t size() const { return m_size; }

 private:
  void* m_data = nullptr;
  size_t m_size = 0;
};

// `bytes` bound to NUMA node `node` with mbind(MPOL_BIND) and touched, so every page is resident
// there.
Result<Mapping> memory_on_node(size_t bytes, unsigned node);

// The NUMA node of every resident page of [addr, addr + bytes) of this process (move_pages
// without moving anything): pages counted per node; pages not resident are left out.
Result<std::map<unsigned, uint64_t>> page_nodes(const void* addr, size_t bytes);

}  // namespace gpubind::sys
