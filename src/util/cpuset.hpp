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
#include <utility>
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
  // The bitmap as its non-zero 64-bit words, each with its index (word i holds members 64i to
  // 64i+63), in increasing index order. Sparse: a core whose siblings are PU 5 and PU 8197 (SMT
  // siblings numbered half the machine apart) is two words, not 129, so set algebra costs the
  // words in use, not the highest member. Room for four words inline: most sets never touch the
  // heap (any set of a machine up to 256 CPUs, any core's PUs).
  struct Chunk {
    uint32_t index = 0;
    uint64_t bits = 0;
    bool operator==(const Chunk&) const = default;
  };
  class Chunks {
   public:
    Chunks() = default;
    Chunks(const Chunks& o) { *this = o; }
    Chunks(Chunks&& o) noexcept { *this = std::move(o); }
    Chunks& operator=(const Chunks& o);
    Chunks& operator=(Chunks&& o) noexcept;
    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    Chunk& operator[](size_t i) { return data()[i]; }
    const Chunk& operator[](size_t i) const { return data()[i]; }
    const Chunk& back() const { return data()[m_size - 1]; }
    Chunk& back() { return data()[m_size - 1]; }
    void push_back(Chunk c);
    void insert(size_t at, Chunk c);
    void erase(size_t at);
    void truncate(size_t n) { m_size = n; }  // n <= size()
    bool operator==(const Chunks& o) const;

   private:
    static constexpr size_t kInline = 4;
    Chunk* data() { return m_heap.empty() ? m_inline : m_heap.data(); }
    const Chunk* data() const { return m_heap.empty() ? m_inline : m_heap.data(); }
    void reserve(size_t n);
    Chunk m_inline[kInline] = {};
    std::vector<Chunk> m_heap;  // the storage once more than kInline were needed (capacity = size)
    size_t m_size = 0;
  };

  // The position of the word with `index`, or where it would be inserted.
  size_t find(uint32_t index) const;
  Chunks m_chunks;  // no zero words
};

}  // namespace gpubind
