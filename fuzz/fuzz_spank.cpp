// The SPANK plugin's plugstack.conf arguments (one per line) and its --gpubind option (the last
// line), as slurmstepd hands them over.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bind/spank_args.hpp"
#include "util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  for (std::string_view line : gpubind::split(text, '\n')) args.emplace_back(line);
  (void)gpubind::bind::parse_plugstack_args(args);
  if (!args.empty()) (void)gpubind::bind::parse_gpubind_option(args.back().c_str());
  (void)gpubind::bind::parse_gpubind_option(nullptr);
  return 0;
}
