// gpubind.conf (read by root's exec and by the SPANK plugin inside slurmstepd).
#include <cstddef>
#include <cstdint>
#include <string>

#include "bind/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpubind::bind::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.conf");
  return 0;
}
