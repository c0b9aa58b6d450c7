#pragma once
// Memory placed on one NUMA node: an anonymous mapping bound there with mbind(MPOL_BIND) and
// touched, so every page is resident on that node before anyone uses it (topo --measure copies
// from it to a GPU). The kernel refuses a node that does not exist or that this process's cpuset
// does not allow.
#include <cstddef>
#include <cstdint>
#include <map>

#include "util/result.hpp"

namespace gpubind::sys {

class NodeBuffer {
 public:
  static Result<NodeBuffer> allocate(size_t bytes, unsigned node);
  NodeBuffer(NodeBuffer&& other) noexcept;
  NodeBuffer& operator=(NodeBuffer&&) = delete;
  NodeBuffer(const NodeBuffer&) = delete;
  ~NodeBuffer();
  void* data() const { return m_data; }
  size_t size() const { return m_size; }

 private:
  NodeBuffer(void* data, size_t size) : m_data(data), m_size(size) {}
  void* m_data = nullptr;
  size_t m_size = 0;
};

// The NUMA node of every resident page of [addr, addr + bytes) of this process (move_pages
// without moving anything): pages counted per node; pages not resident are left out.
Result<std::map<unsigned, uint64_t>> page_nodes(const void* addr, size_t bytes);

}  // namespace gpubind::sys
