// NVIDIA PCI device IDs -> compute capability. CUDA's default device order (FASTEST_FIRST)
// depends on it, and the PCI id is all most topology sources give. The ranges are the chip
// families' device-ID blocks as listed in the PCI ID database (pci.ids); a device ID outside
// them is unknown rather than guessed.
#include <array>

#include "topo/topology.hpp"

namespace gpubind::topo {

namespace {

struct ArchRange {
  uint16_t first;
  uint16_t last;
  unsigned cc;  // major * 10 + minor
  const char* chip;
};

constexpr std::array<ArchRange, 41> kRanges = {{
    {0x06c0, 0x06df, 20, "GF100"},  {0x0dc0, 0x0dff, 21, "GF106/GF108"}, {0x0e20, 0x0e3f, 21, "GF104"},
    {0x0fc0, 0x0fff, 30, "GK107"},  {0x102d, 0x102d, 37, "GK210"},       {0x1000, 0x103f, 35, "GK110"},
    {0x1040, 0x107f, 21, "GF119/GF117"}, {0x1080, 0x109f, 20, "GF110"}, {0x1180, 0x11ff, 30, "GK104/GK106"},
    {0x1200, 0x121f, 21, "GF114"},  {0x1240, 0x125f, 21, "GF116"},       {0x1280, 0x12bf, 35, "GK208"},
    {0x1340, 0x13bf, 50, "GM107/GM108"}, {0x13c0, 0x13ff, 52, "GM204"},  {0x1400, 0x143f, 52, "GM206"},
    {0x15f0, 0x15ff, 60, "GP100"},  {0x17c0, 0x17ff, 52, "GM200"},       {0x1b00, 0x1b3f, 61, "GP102"},
    {0x1b80, 0x1bff, 61, "GP104"},  {0x1c00, 0x1c7f, 61, "GP106"},       {0x1c80, 0x1cff, 61, "GP107"},
    {0x1d00, 0x1d7f, 61, "GP108"},  {0x1d80, 0x1dff, 70, "GV100"},       {0x1e00, 0x1e7f, 75, "TU102"},
    {0x1e80, 0x1eff, 75, "TU104"},  {0x1f00, 0x1f7f, 75, "TU106"},       {0x1f80, 0x1fff, 75, "TU117"},
    {0x2080, 0x20ff, 80, "GA100"},  {0x2180, 0x21ff, 75, "TU116"},       {0x2200, 0x223f, 86, "GA102"},
    {0x2300, 0x237f, 90, "GH100"},  {0x2400, 0x247f, 86, "GA103"},       {0x2480, 0x24ff, 86, "GA104"},
    {0x2500, 0x257f, 86, "GA106"},  {0x2580, 0x25ff, 86, "GA107"},       {0x2680, 0x26ff, 89, "AD102"},
    {0x2700, 0x277f, 89, "AD103"},  {0x2780, 0x27ff, 89, "AD104"},       {0x2800, 0x28ff, 89, "AD106/AD107"},
    {0x2900, 0x29ff, 100, "GB100"}, {0x2b00, 0x2dff, 120, "GB202-GB207"},
}};

}  // namespace

std::optional<unsigned> nvidia_compute_capability(uint16_t device_id) {
  // First match wins: GK210 (K80) sits inside GK110's block.
  for (const ArchRange& r : kRanges)
    if (device_id >= r.first && device_id <= r.last) return r.cc;
  return std::nullopt;
}

}  // namespace gpubind::topo
