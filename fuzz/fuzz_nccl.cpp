// The hand-written XML reader and the NCCL/RCCL topology loader; loadable inputs are planned.
#include <cstddef>
#include <cstdint>
#include <string>

#include "discover/nccl_loader.hpp"
#include "discover/xml.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)gpubind::discover::parse_xml(text);
  auto t = gpubind::discover::load_nccl_xml(text, "fuzz");
  if (t && t->cpus.count() <= 4096) gpubind::fuzz::check_plan(*t, {});
  return 0;
}
