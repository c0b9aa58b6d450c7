#include "util/cpuset.hpp"

#include <algorithm>
#include <bit>
#include <charconv>

#include "util/strings.hpp"

namespace gpubind {

namespace {
// A ceiling that keeps a typo ("0-4000000000") from allocating gigabytes; Linux's own limit
// (CONFIG_NR_CPUS) is 8192 on common distributions, NUMA node counts are far below it.
constexpr unsigned kMaxId = 1u << 20;

std::optional<unsigned> parse_id(std::string_view s) {
  s = trim(s);
  unsigned v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > kMaxId) return std::nullopt;
  return v;
}
}  // namespace

CpuSet::Chunks& CpuSet::Chunks::operator=(const Chunks& o) {
  if (this == &o) return *this;
  m_size = 0;
  reserve(o.m_size);
  std::copy(o.data(), o.data() + o.m_size, data());
  m_size = o.m_size;
  return *this;
}

CpuSet::Chunks& CpuSet::Chunks::operator=(Chunks&& o) noexcept {
  if (this == &o) return *this;
  if (o.m_heap.empty()) {
    m_heap.clear();
    std::copy(o.m_inline, o.m_inline + o.m_size, m_inline);
  } else {
    m_heap = std::move(o.m_heap);
    o.m_heap.clear();
  }
  m_size = o.m_size;
  o.m_size = 0;
  return *this;
}

void CpuSet::Chunks::reserve(size_t n) {
  size_t capacity = m_heap.empty() ? kInline : m_heap.size();
  if (n <= capacity) return;
  std::vector<Chunk> grown(std::max(n, capacity * 2));
  std::copy(data(), data() + m_size, grown.begin());
  m_heap.swap(grown);
}

void CpuSet::Chunks::push_back(Chunk c) {
  reserve(m_size + 1);
  data()[m_size++] = c;
}

void CpuSet::Chunks::insert(size_t at, Chunk c) {
  reserve(m_size + 1);
  Chunk* d = data();
  std::copy_backward(d + at, d + m_size, d + m_size + 1);
  d[at] = c;
  ++m_size;
}

void CpuSet::Chunks::erase(size_t at) {
  Chunk* d = data();
  std::copy(d + at + 1, d + m_size, d + at);
  --m_size;
}

bool CpuSet::Chunks::operator==(const Chunks& o) const {
  return m_size == o.m_size && std::equal(data(), data() + m_size, o.data());
}

size_t CpuSet::find(uint32_t index) const {
  size_t lo = 0, hi = m_chunks.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m_chunks[mid].index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

CpuSet CpuSet::range(unsigned first, unsigned last) {
  CpuSet s;
  for (unsigned w = first / 64; first <= last && w <= last / 64; ++w) {
    unsigned lo = w == first / 64 ? first % 64 : 0, hi = w == last / 64 ? last % 64 : 63;
    uint64_t bits = (hi == 63 ? ~uint64_t(0) : (uint64_t(1) << (hi + 1)) - 1) & ~((uint64_t(1) << lo) - 1);
    s.m_chunks.push_back({w, bits});
  }
  return s;
}

CpuSet CpuSet::of(std::initializer_list<unsigned> ids) {
  CpuSet s;
  for (unsigned i : ids) s.set(i);
  return s;
}

CpuSet CpuSet::from_words(const uint64_t* words, size_t n) {
  CpuSet s;
  for (size_t i = 0; i < n; ++i)
    if (words[i]) s.m_chunks.push_back({uint32_t(i), words[i]});
  return s;
}

Result<CpuSet> CpuSet::parse_list(std::string_view text) {
  CpuSet s;
  text = trim(text);
  if (text.empty()) return s;
  for (std::string_view part : split(text, ',')) {
    auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      auto id = parse_id(part);
      if (!id) return Error{"cpu list '" + std::string(text) + "'", "'" + std::string(part) + "' is not a CPU number"};
      s.set(*id);
      continue;
    }
    // Linux also writes strided ranges "0-31:2" (cpuset.cpus allows it): step after ':'.
    std::string_view hi_part = part.substr(dash + 1);
    unsigned stride = 1;
    if (auto colon = hi_part.find(':'); colon != std::string_view::npos) {
      auto st = parse_id(hi_part.substr(colon + 1));
      if (!st || *st == 0) return Error{"cpu list '" + std::string(text) + "'", "bad stride in '" + std::string(part) + "'"};
      stride = *st;
      hi_part = hi_part.substr(0, colon);
    }
    auto lo = parse_id(part.substr(0, dash));
    auto hi = parse_id(hi_part);
    if (!lo || !hi || *lo > *hi)
      return Error{"cpu list '" + std::string(text) + "'", "'" + std::string(part) + "' is not a range"};
    if (stride == 1) s |= range(*lo, *hi);
    else
      for (unsigned i = *lo; i <= *hi; i += stride) s.set(i);
  }
  return s;
}

Result<CpuSet> CpuSet::parse_mask(std::string_view text) {
  CpuSet s;
  text = trim(text);
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty()) return Error{"cpu mask", "empty"};
  std::vector<std::string_view> words = split(text, ',');
  unsigned bit = 0;
  for (auto it = words.rbegin(); it != words.rend(); ++it) {
    std::string_view w = trim(*it);
    // A single word without commas may be longer than 8 digits ("0xffffffffffff"): walk digits.
    for (auto c = w.rbegin(); c != w.rend(); ++c) {
      unsigned v = 0;
      if (*c >= '0' && *c <= '9') v = unsigned(*c - '0');
      else if (*c >= 'a' && *c <= 'f') v = unsigned(*c - 'a' + 10);
      else if (*c >= 'A' && *c <= 'F') v = unsigned(*c - 'A' + 10);
      else return Error{"cpu mask '" + std::string(text) + "'", std::string("'") + *c + "' is not a hex digit"};
      for (unsigned b = 0; b < 4; ++b) {
        if (!(v & (1u << b))) continue;
        // The same ceiling as a cpulist's, so every set reads back from its own list form.
        if (bit + b > kMaxId) return Error{"cpu mask", "CPU " + std::to_string(bit + b) + " is beyond " + std::to_string(kMaxId)};
        s.set(bit + b);
      }
      bit += 4;
    }
    // Words given with commas are 32 bits each even when written short ("ff,0").
    if (words.size() > 1) bit = (bit + 31) / 32 * 32;
  }
  return s;
}

std::string CpuSet::to_list() const {
  std::string out;
  std::vector<unsigned> v = ids();
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

std::string CpuSet::to_mask() const {
  if (m_chunks.empty()) return "0";
  static const char* hex = "0123456789abcdef";
  auto word = [&](size_t i) {  // 64-bit word i of the dense bitmap
    size_t at = find(uint32_t(i));
    return at < m_chunks.size() && m_chunks[at].index == i ? m_chunks[at].bits : uint64_t(0);
  };
  std::string out;
  size_t n32 = (size_t(m_chunks.back().index) + 1) * 2;
  while (n32 > 1 && ((word((n32 - 1) / 2) >> (32 * ((n32 - 1) % 2))) & 0xffffffffu) == 0) --n32;
  for (size_t w = n32; w-- > 0;) {
    uint32_t half = uint32_t(word(w / 2) >> (32 * (w % 2)));
    for (int d = 7; d >= 0; --d) out += hex[(half >> (4 * d)) & 0xf];
    if (w) out += ',';
  }
  return out;
}

void CpuSet::set(unsigned id) {
  uint32_t w = id / 64;
  uint64_t bit = uint64_t(1) << (id % 64);
  // Members added in increasing order (lists, ranges, masks) land in the last word or after it.
  if (m_chunks.empty() || m_chunks.back().index < w) return m_chunks.push_back({w, bit});
  if (m_chunks.back().index == w) {
    m_chunks.back().bits |= bit;
    return;
  }
  size_t at = find(w);
  if (at < m_chunks.size() && m_chunks[at].index == w) m_chunks[at].bits |= bit;
  else m_chunks.insert(at, {w, bit});
}

void CpuSet::clear(unsigned id) {
  size_t at = find(id / 64);
  if (at == m_chunks.size() || m_chunks[at].index != id / 64) return;
  m_chunks[at].bits &= ~(uint64_t(1) << (id % 64));
  if (m_chunks[at].bits == 0) m_chunks.erase(at);
}

bool CpuSet::test(unsigned id) const {
  size_t at = find(id / 64);
  return at < m_chunks.size() && m_chunks[at].index == id / 64 && (m_chunks[at].bits >> (id % 64)) & 1;
}

bool CpuSet::empty() const { return m_chunks.empty(); }

unsigned CpuSet::count() const {
  unsigned n = 0;
  for (size_t i = 0; i < m_chunks.size(); ++i) n += unsigned(std::popcount(m_chunks[i].bits));
  return n;
}

std::optional<unsigned> CpuSet::first() const {
  if (m_chunks.empty()) return std::nullopt;
  return m_chunks[0].index * 64 + unsigned(std::countr_zero(m_chunks[0].bits));
}

std::optional<unsigned> CpuSet::last() const {
  if (m_chunks.empty()) return std::nullopt;
  return m_chunks.back().index * 64 + 63 - unsigned(std::countl_zero(m_chunks.back().bits));
}

std::vector<unsigned> CpuSet::ids() const {
  std::vector<unsigned> v;
  v.reserve(count());
  for (size_t i = 0; i < m_chunks.size(); ++i)
    for (uint64_t bits = m_chunks[i].bits; bits; bits &= bits - 1)
      v.push_back(m_chunks[i].index * 64 + unsigned(std::countr_zero(bits)));
  return v;
}

CpuSet CpuSet::operator|(const CpuSet& o) const {
  CpuSet r = *this;
  r |= o;
  return r;
}

CpuSet CpuSet::operator&(const CpuSet& o) const {
  CpuSet r = *this;
  r &= o;
  return r;
}

CpuSet CpuSet::operator-(const CpuSet& o) const {
  CpuSet r;
  size_t j = 0;
  for (size_t i = 0; i < m_chunks.size(); ++i) {
    Chunk c = m_chunks[i];
    while (j < o.m_chunks.size() && o.m_chunks[j].index < c.index) ++j;
    if (j < o.m_chunks.size() && o.m_chunks[j].index == c.index) c.bits &= ~o.m_chunks[j].bits;
    if (c.bits) r.m_chunks.push_back(c);
  }
  return r;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
  if (o.m_chunks.empty()) return *this;
  // Appending past the end (sets built in increasing order) needs no merge.
  if (m_chunks.empty() || m_chunks.back().index < o.m_chunks[0].index) {
    for (size_t j = 0; j < o.m_chunks.size(); ++j) m_chunks.push_back(o.m_chunks[j]);
    return *this;
  }
  Chunks merged;
  size_t i = 0, j = 0;
  while (i < m_chunks.size() || j < o.m_chunks.size()) {
    if (j == o.m_chunks.size() || (i < m_chunks.size() && m_chunks[i].index < o.m_chunks[j].index)) {
      merged.push_back(m_chunks[i++]);
    } else if (i == m_chunks.size() || o.m_chunks[j].index < m_chunks[i].index) {
      merged.push_back(o.m_chunks[j++]);
    } else {
      merged.push_back({m_chunks[i].index, m_chunks[i].bits | o.m_chunks[j].bits});
      ++i, ++j;
    }
  }
  m_chunks = std::move(merged);
  return *this;
}

CpuSet& CpuSet::operator&=(const CpuSet& o) {
  size_t kept = 0, j = 0;
  for (size_t i = 0; i < m_chunks.size(); ++i) {
    while (j < o.m_chunks.size() && o.m_chunks[j].index < m_chunks[i].index) ++j;
    if (j == o.m_chunks.size()) break;
    if (o.m_chunks[j].index != m_chunks[i].index) continue;
    if (uint64_t bits = m_chunks[i].bits & o.m_chunks[j].bits) m_chunks[kept++] = {m_chunks[i].index, bits};
  }
  m_chunks.truncate(kept);
  return *this;
}

bool CpuSet::intersects(const CpuSet& o) const {
  size_t i = 0, j = 0;
  while (i < m_chunks.size() && j < o.m_chunks.size()) {
    if (m_chunks[i].index < o.m_chunks[j].index) ++i;
    else if (o.m_chunks[j].index < m_chunks[i].index) ++j;
    else if (m_chunks[i++].bits & o.m_chunks[j++].bits) return true;
  }
  return false;
}

bool CpuSet::is_subset_of(const CpuSet& o) const {
  size_t j = 0;
  for (size_t i = 0; i < m_chunks.size(); ++i) {
    while (j < o.m_chunks.size() && o.m_chunks[j].index < m_chunks[i].index) ++j;
    uint64_t theirs = j < o.m_chunks.size() && o.m_chunks[j].index == m_chunks[i].index ? o.m_chunks[j].bits : 0;
    if (m_chunks[i].bits & ~theirs) return false;
  }
  return true;
}

bool CpuSet::operator==(const CpuSet& o) const { return m_chunks == o.m_chunks; }

bool CpuSet::operator<(const CpuSet& o) const {
  auto a = first(), b = o.first();
  if (a != b) return a < b;
  if (count() != o.count()) return count() < o.count();
  return ids() < o.ids();
}

}  // namespace gpubind
