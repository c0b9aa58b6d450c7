// cpulist ("0-3,8") and hex-mask ("ff,00000001") parsing, with the round-trip properties.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.hpp"
#include "util/cpuset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpubind::CpuSet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto s = CpuSet::parse_list(text)) {
    auto again = CpuSet::parse_list(s->to_list());
    gpubind::fuzz::require(again.ok() && *again == *s, "cpulist round trip: '" + s->to_list() + "'");
  }
  if (auto m = CpuSet::parse_mask(text)) {
    auto again = CpuSet::parse_mask(m->to_mask());
    gpubind::fuzz::require(again.ok() && *again == *m, "mask round trip: '" + m->to_mask() + "'");
    auto as_list = CpuSet::parse_list(m->to_list());
    gpubind::fuzz::require(as_list.ok() && *as_list == *m, "mask -> cpulist round trip: '" + m->to_list() + "'");
  }
  return 0;
}
