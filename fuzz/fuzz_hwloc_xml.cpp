// hwloc XML through gpubind's loader (hwloc parses, gpubind turns its objects into a Topology);
// loadable inputs are planned.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "discover/hwloc_loader.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int fd = memfd_create("fuzz-hwloc.xml", 0);
  if (fd < 0) return 0;
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) return 0;
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  gpubind::discover::HwlocInput in{gpubind::discover::HwlocInput::Kind::xml_file, path, "fuzz"};
  auto t = gpubind::discover::load_with_hwloc(in);
  if (t && t->cpus.count() <= 4096) gpubind::fuzz::check_plan(*t, {});
  return 0;
}
