// bench --input: a saved run (the JSON `bench --json` or `bench --ab --json` writes) read back
// and reported. Another user may have written the file. Property: a record that loads is
// reported without a crash, and saving it gives a record that loads again with the same
// strategies (runs). And bench --ab's reading of a job's output: the input as what the ranks
// printed, never a crash, every step time found finite and not negative, every warning found
// said once and named by its owner.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/ab.hpp"
#include "bench/record.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto pattern = gpubind::bench::parse_step_pattern("step [0-9]+ (?<ms>[0-9.]+) ms");
  std::string text(reinterpret_cast<const char*>(data), size);
  for (double ms : gpubind::bench::step_times_in_output(text, *pattern, 0))
    gpubind::fuzz::require(std::isfinite(ms) && ms >= 0, "a step time read from the output is a finite, non-negative number");
  auto warnings = gpubind::bench::rank_warnings_in_output(text, "closest's ranks");
  for (size_t i = 0; i < warnings.size(); ++i) {
    gpubind::fuzz::require(warnings[i].starts_with("closest's ranks: "), "a rank's warning is named by its policy");
    for (size_t k = 0; k < i; ++k) gpubind::fuzz::require(warnings[k] != warnings[i], "each rank warning is said once");
  }
  if (auto file = gpubind::bench::step_times_in_file(text))
    for (double ms : *file) gpubind::fuzz::require(std::isfinite(ms) && ms >= 0, "a step file's time is finite and not negative");
  nlohmann::json j = nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size, nullptr, false);
  if (j.is_discarded()) return 0;
  if (auto ab = gpubind::bench::ab_record_from_json(j)) {
    (void)gpubind::bench::make_ab_report(*ab);
    auto again = gpubind::bench::ab_record_from_json(nlohmann::json::parse(gpubind::bench::to_json(*ab).dump()));
    gpubind::fuzz::require(again.ok() && again->runs.size() == ab->runs.size(), "bench --ab record round trip");
    return 0;
  }
  auto r = gpubind::bench::record_from_json(j);
  if (!r) return 0;
  (void)gpubind::bench::make_report(*r);
  auto again = gpubind::bench::record_from_json(nlohmann::json::parse(gpubind::bench::to_json(*r).dump()));
  gpubind::fuzz::require(again.ok() && again->strategies.size() == r->strategies.size(), "bench record round trip");
  return 0;
}
