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

void CpuSet::Words::resize(size_t n, uint64_t fill) {
  if (n <= kInline) {
    if (m_size > kInline) {  // heap -> inline
      for (size_t i = 0; i < n; ++i) m_inline[i] = m_heap[i];
      m_heap.clear();
    } else {
      for (size_t i = m_size; i < n; ++i) m_inline[i] = fill;
    }
  } else {
    if (m_size <= kInline) m_heap.assign(m_inline, m_inline + m_size);  // inline -> heap
    m_heap.resize(n, fill);
  }
  m_size = n;
}

bool CpuSet::Words::operator==(const Words& o) const {
  if (m_size != o.m_size) return false;
  for (size_t i = 0; i < m_size; ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

CpuSet CpuSet::range(unsigned first, unsigned last) {
  CpuSet s;
  for (unsigned i = first; i <= last; ++i) s.set(i);
  return s;
}

CpuSet CpuSet::of(std::initializer_list<unsigned> ids) {
  CpuSet s;
  for (unsigned i : ids) s.set(i);
  return s;
}

CpuSet CpuSet::from_words(const uint64_t* words, size_t n) {
  CpuSet s;
  s.m_words.resize(n);
  for (size_t i = 0; i < n; ++i) s.m_words[i] = words[i];
  s.drop_zero_words();
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
  if (m_words.empty()) return "0";
  static const char* hex = "0123456789abcdef";
  std::string out;
  size_t n32 = m_words.size() * 2;
  while (n32 > 1 && ((m_words[(n32 - 1) / 2] >> (32 * ((n32 - 1) % 2))) & 0xffffffffu) == 0) --n32;
  for (size_t w = n32; w-- > 0;) {
    uint32_t word = uint32_t(m_words[w / 2] >> (32 * (w % 2)));
    for (int d = 7; d >= 0; --d) out += hex[(word >> (4 * d)) & 0xf];
    if (w) out += ',';
  }
  return out;
}

void CpuSet::set(unsigned id) {
  size_t w = id / 64;
  if (m_words.size() <= w) m_words.resize(w + 1, 0);
  m_words[w] |= uint64_t(1) << (id % 64);
}

void CpuSet::clear(unsigned id) {
  size_t w = id / 64;
  if (w < m_words.size()) {
    m_words[w] &= ~(uint64_t(1) << (id % 64));
    drop_zero_words();
  }
}

bool CpuSet::test(unsigned id) const {
  size_t w = id / 64;
  return w < m_words.size() && (m_words[w] >> (id % 64)) & 1;
}

bool CpuSet::empty() const { return m_words.empty(); }

unsigned CpuSet::count() const {
  unsigned n = 0;
  for (size_t w = 0; w < m_words.size(); ++w) n += unsigned(std::popcount(m_words[w]));
  return n;
}

std::optional<unsigned> CpuSet::first() const {
  for (size_t w = 0; w < m_words.size(); ++w)
    if (m_words[w]) return unsigned(w * 64 + unsigned(std::countr_zero(m_words[w])));
  return std::nullopt;
}

std::optional<unsigned> CpuSet::last() const {
  if (m_words.empty()) return std::nullopt;
  size_t w = m_words.size() - 1;
  return unsigned(w * 64 + 63 - unsigned(std::countl_zero(m_words[w])));
}

std::vector<unsigned> CpuSet::ids() const {
  std::vector<unsigned> v;
  for (size_t w = 0; w < m_words.size(); ++w) {
    uint64_t bits = m_words[w];
    while (bits) {
      v.push_back(unsigned(w * 64 + unsigned(std::countr_zero(bits))));
      bits &= bits - 1;
    }
  }
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
  CpuSet r = *this;
  for (size_t w = 0; w < std::min(r.m_words.size(), o.m_words.size()); ++w) r.m_words[w] &= ~o.m_words[w];
  r.drop_zero_words();
  return r;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
  if (m_words.size() < o.m_words.size()) m_words.resize(o.m_words.size(), 0);
  for (size_t w = 0; w < o.m_words.size(); ++w) m_words[w] |= o.m_words[w];
  return *this;
}

CpuSet& CpuSet::operator&=(const CpuSet& o) {
  if (m_words.size() > o.m_words.size()) m_words.resize(o.m_words.size());
  for (size_t w = 0; w < m_words.size(); ++w) m_words[w] &= o.m_words[w];
  drop_zero_words();
  return *this;
}

bool CpuSet::intersects(const CpuSet& o) const {
  for (size_t w = 0; w < std::min(m_words.size(), o.m_words.size()); ++w)
    if (m_words[w] & o.m_words[w]) return true;
  return false;
}

bool CpuSet::is_subset_of(const CpuSet& o) const {
  for (size_t w = 0; w < m_words.size(); ++w) {
    uint64_t theirs = w < o.m_words.size() ? o.m_words[w] : 0;
    if (m_words[w] & ~theirs) return false;
  }
  return true;
}

bool CpuSet::operator==(const CpuSet& o) const { return m_words == o.m_words; }

bool CpuSet::operator<(const CpuSet& o) const {
  auto a = first(), b = o.first();
  if (a != b) return a < b;
  if (count() != o.count()) return count() < o.count();
  return ids() < o.ids();
}

void CpuSet::drop_zero_words() {
  while (!m_words.empty() && m_words.back() == 0) m_words.pop_back();
}

}  // namespace gpubind
