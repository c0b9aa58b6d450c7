#pragma once
// CpuSet: a set of CPU (PU) or NUMA-node OS indexes, stored as a bitmap.
// Text forms it reads and writes:
//   cpulist  "0-3,8,10-11"             (Linux /sys and /proc *_list files, taskset -c)
//   mask     "000000ff,ffffffff"       (Linux cpumap files, NCCL `affinity`; 32-bit words, most
//                                       significant first; an optional 0x prefix is accepted)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace gpubind {

class CpuSet {
 public:
  CpuSet() = default;
  static CpuSet range(unsigned first, unsigned last);  // inclusive
  static CpuSet of(std::initializer_list<unsigned> ids);
  // From a bitmap of `n` 64-bit words, bit i of word w being member 64 * w + i (the kernel's CPU
  // masks on 64-bit machines).
  static CpuSet from_words(const uint64_t* words, size_t n);

  // Parses a cpulist; "" is the empty set.
  static Result<CpuSet> parse_list(std::string_view text);
  // Parses a Linux/NCCL hex mask.
  static Result<CpuSet> parse_mask(std::string_view text);

  std::string to_list() const;
  std::string to_mask() const;

  void set(unsigned id);
  void clear(unsigned id);
  bool test(unsigned id) const;
  bool empty() const;
  unsigned count() const;
  std::optional<unsigned> first() const;
  std::optional<unsigned> last() const;
  // All members in increasing order.
  std::vector<unsigned> ids() const;

  CpuSet operator|(const CpuSet& o) const;
  CpuSet operator&(const CpuSet& o) const;
  CpuSet operator-(const CpuSet& o) const;  // set difference
  CpuSet& operator|=(const CpuSet& o);
  CpuSet& operator&=(const CpuSet& o);
  bool intersects(const CpuSet& o) const;
  bool is_subset_of(const CpuSet& o) const;
  bool operator==(const CpuSet& o) const;
  // Orders by lowest member first (then by size), so lists of sets sort the way people read them.
  bool operator<(const CpuSet& o) const;

 private:
  // The bitmap's 64-bit words with room for 256 CPUs inline: sets are built and combined in
  // every planning step, and most machines fit, so most sets never touch the heap.
  class Words {
   public:
    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    uint64_t& operator[](size_t i) { return data()[i]; }
    uint64_t operator[](size_t i) const { return data()[i]; }
    uint64_t back() const { return data()[m_size - 1]; }
    void pop_back() { resize(m_size - 1); }
    void resize(size_t n, uint64_t fill = 0);
    bool operator==(const Words& o) const;

   private:
    static constexpr size_t kInline = 4;
    uint64_t* data() { return m_size > kInline ? m_heap.data() : m_inline; }
    const uint64_t* data() const { return m_size > kInline ? m_heap.data() : m_inline; }
    uint64_t m_inline[kInline] = {};
    std::vector<uint64_t> m_heap;  // in use only when m_size > kInline
    size_t m_size = 0;
  };

  void drop_zero_words();
  Words m_words;  // no trailing zero words
};

}  // namespace gpubind
