// gpubind's JSON topology import: whatever imports round-trips (import(export(t)) == t) and plans
// within the invariants.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_util.hpp"
#include "topo/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  auto t = gpubind::topo::from_json(j);
  if (!t) return 0;
  std::string once = gpubind::topo::to_json(*t).dump();
  auto back = gpubind::topo::from_json(nlohmann::json::parse(once));
  gpubind::fuzz::require(back.ok(), "re-import of an export failed: " + (back ? std::string() : back.error().message()));
  gpubind::fuzz::require(gpubind::topo::to_json(*back).dump() == once, "JSON round trip changed the topology");
  if (t->cpus.count() <= 4096) gpubind::fuzz::check_plan(*t, {});
  return 0;
}
