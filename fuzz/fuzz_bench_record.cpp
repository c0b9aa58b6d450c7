// bench --input: a saved run (the JSON `bench --json` writes) read back and reported. Another
// user may have written the file. Property: a record that loads is reported without a crash, and
// saving it gives a record that loads again with the same strategies.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/record.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size, nullptr, false);
  if (j.is_discarded()) return 0;
  auto r = gpubind::bench::record_from_json(j);
  if (!r) return 0;
  (void)gpubind::bench::make_report(*r);
  auto again = gpubind::bench::record_from_json(nlohmann::json::parse(gpubind::bench::to_json(*r).dump()));
  gpubind::fuzz::require(again.ok() && again->strategies.size() == r->strategies.size(), "bench record round trip");
  return 0;
}
