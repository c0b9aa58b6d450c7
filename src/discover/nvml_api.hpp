#pragma once
// The few NVML entry points gpubind calls, declared here from NVIDIA's public NVML API reference
// (no NVIDIA header is packaged in Debian). libnvidia-ml.so.1 is loaded with dlopen, never linked.
// Types keep NVML's layouts; names are gpubind's.
#include <cstdint>

namespace gpubind::discover::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;

struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t

struct PciInfo {           // nvmlPciInfo_t (the _v3 call's layout)
  char bus_id_legacy[16];  // "0000:18:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;     // device id << 16 | vendor id
  unsigned int pci_subsystem_id;
  char bus_id[32];                // "00000000:18:00.0"
};

struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};

struct Memory {  // nvmlMemory_t, bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// The calls, with the names the library exports.
using InitFn = Return (*)();                                           // nvmlInit_v2
using ShutdownFn = Return (*)();                                       // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                         // nvmlErrorString
using VersionFn = Return (*)(char*, unsigned int);                     // nvmlSystemGetNVMLVersion
using CountFn = Return (*)(unsigned int*);                             // nvmlDeviceGetCount_v2
using HandleFn = Return (*)(unsigned int, Device*);                    // nvmlDeviceGetHandleByIndex_v2
using PciFn = Return (*)(Device, PciInfo*);                            // nvmlDeviceGetPciInfo_v3
using TextFn = Return (*)(Device, char*, unsigned int);                // nvmlDeviceGetUUID, nvmlDeviceGetName
using UtilizationFn = Return (*)(Device, Utilization*);                // nvmlDeviceGetUtilizationRates
using MemoryFn = Return (*)(Device, Memory*);                          // nvmlDeviceGetMemoryInfo
// nvmlDeviceGetPcieThroughput(device, counter, KB/s over NVML's last 20 ms): counter 0 is TX
// (from the GPU), 1 RX.
using PcieThroughputFn = Return (*)(Device, int, unsigned int*);
// nvmlDeviceGetCpuAffinity(device, words, mask): the CPUs nearest the device (NUMA-node scope),
// 64 per unsigned long.
using CpuAffinityFn = Return (*)(Device, unsigned int, unsigned long*);
// nvmlDeviceGetNumaNodeId(device, node) (newer drivers).
using NumaNodeFn = Return (*)(Device, unsigned int*);
// MIG: nvmlDeviceGetMigMode(device, current, pending) (1 enabled), nvmlDeviceGetMaxMigDeviceCount
// (device, count), nvmlDeviceGetMigDeviceHandleByIndex(device, index, mig); a MIG handle's UUID
// ("MIG-...") comes from nvmlDeviceGetUUID.
using MigModeFn = Return (*)(Device, unsigned int*, unsigned int*);
using MigCountFn = Return (*)(Device, unsigned int*);
using MigHandleFn = Return (*)(Device, unsigned int, Device*);
// nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId: a MIG device's GPU instance and
// compute instance (NVML 11.0+; NOT_SUPPORTED on a whole GPU).
using MigInstanceIdFn = Return (*)(Device, unsigned int*);
inline constexpr unsigned kMigEnabled = 1;
// PCIe link: nvmlDeviceGetCurrPcieLinkGeneration / ...MaxPcieLinkGeneration / ...CurrPcieLinkWidth /
// ...MaxPcieLinkWidth (device, value). The maximum is the lower of what the GPU and its slot can do.
using PcieLinkFn = Return (*)(Device, unsigned int*);
// nvmlDeviceGetSerial(device, text, length): the board's serial number.
// NVLink, per link slot 0..kNvLinkMaxLinks-1 (a slot past the GPU's own count answers an error):
// nvmlDeviceGetNvLinkState(device, link, active) (1 active), nvmlDeviceGetNvLinkRemotePciInfo_v2
// (device, link, pci) the other end's PCI address, nvmlDeviceGetNvLinkRemoteDeviceType(device,
// link, type): a GPU, an IBM NPU (the CPU of a POWER9) or an NVSwitch.
using NvLinkStateFn = Return (*)(Device, unsigned int, unsigned int*);
using NvLinkRemotePciFn = Return (*)(Device, unsigned int, PciInfo*);
using NvLinkRemoteTypeFn = Return (*)(Device, unsigned int, unsigned int*);
inline constexpr unsigned kNvLinkMaxLinks = 18;
inline constexpr unsigned kNvLinkActive = 1;
inline constexpr unsigned kNvLinkRemoteGpu = 0;
inline constexpr unsigned kNvLinkRemoteSwitch = 2;
inline constexpr unsigned kNvLinkRemoteUnknown = 0xff;
inline constexpr Return kErrorNotFound = 6;
inline constexpr int kPcieTx = 0;
inline constexpr int kPcieRx = 1;

// The processes with a compute context on a device: nvmlDeviceGetComputeRunningProcesses_v3
// (device, count in/out, infos) with ProcessInfo; the unversioned call of older drivers fills
// ProcessInfoV1. A count too small answers kErrorInsufficientSize with the count needed.
struct ProcessInfo {  // nvmlProcessInfo_t (v2 and v3)
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes; ~0ull when unavailable (Windows, MIG without permission)
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
using ProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
using ProcessesV1Fn = Return (*)(Device, unsigned int*, ProcessInfoV1*);
inline constexpr unsigned long long kValueNotAvailable = ~0ull;

inline constexpr const char* kLibrary = "libnvidia-ml.so.1";

}  // namespace gpubind::discover::nvml
