#pragma once
// What NCCL (and RCCL) said it did, per rank, from its own INFO output (`NCCL_DEBUG=INFO`, one
// file per rank with `NCCL_DEBUG_FILE`, or every rank's lines in one stream), for `check
// --nccl-log` (issue 55). Pure: the files' text in, one record per process out.
//
// The lines read, as NCCL's source prints them (src/debug.cc, src/init.cc, src/graph/topo.cc,
// src/transport/net*.cc, src/proxy.cc at the tags v2.18.1-1 to v2.30.7-1; RCCL at rocm-6.2):
//   every line     "[TIMESTAMP] HOST:PID:TID [CUDADEV] NCCL INFO MESSAGE" (the timestamp only with
//                  NCCL_DEBUG_TIMESTAMP_*; launchers may put a tag before it: pdsh's "host: ",
//                  mpirun --tag-output's "[1,0]<stdout>:")
//   init           "comm PTR rank R nranks N cudaDev D [nvmlDev V] busId B ... - Init START|COMPLETE"
//                  (2.19+ put the calling function first, 2.30 "[Rank R]" before that)
//                  "comm PTR rank R nRanks N nNodes M localRanks L localRank I MNNVL X" (2.19+)
//   CPU affinity   through 2.27: "Setting affinity for GPU G to MASK" (hex words, as
//                  ncclCpusetToStr; nothing at all when the set is empty)
//                  2.28+: "ncclTopoGetCpuAffinity: Affinity for GPU G is LIST|empty, ignoring.
//                  (GPU affinity = LIST ; CPU affinity = LIST)." (no CPU part with
//                  NCCL_IGNORE_CPU_AFFINITY=1)
//   NICs           "NET/NAME : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ..." (IB),
//                  "NET/Socket : Using [0]eth0:10.0.0.1<0>", "Using network NAME"
//   channels       "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0[(PROXYRANK)][/GDRDMA[(PCI)]][/Shared]"
//   GPU Direct     "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
//                  "GPU Direct RDMA Disabled for GPU ... (distance D > L)" (INFO through 2.29)
//   proxy thread   "[Proxy Progress] Device D CPU core C" (2.28+), "NCCL_PROXY_CPUSET = SET: ..."
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/cpuset.hpp"

namespace gpubind::check {

// A NET device as one NCCL transport listed it.
struct NcclNetUse {
  unsigned channels = 0;      // channel connections of this rank through it, its own GPU's
  unsigned gdr_channels = 0;  // of those, with GPU Direct RDMA (/GDRDMA)
  unsigned proxied = 0;       // connections through another GPU's NIC (PXN: "via NET/IB/0(2)")
};

// One communicator of a process, from its init lines.
struct NcclComm {
  std::string ptr;  // "0x55555d812aa0"
  unsigned rank = 0, nranks = 0;
  std::optional<unsigned> local_rank, local_ranks, nodes;
  std::string init_tid;  // the thread that logged Init START (its affinity line is that thread's)
};

// What NCCL said of its affinity for one communicator's init.
struct NcclAffinity {
  // The set it pinned its threads to; empty: 2.28+'s "empty, ignoring" (the rank's CPUs and the
  // GPU's had none in common: NCCL left them as they were).
  CpuSet set;
  bool range_form = false;             // 2.28+'s line (GPU and CPU affinity given too)
  std::optional<CpuSet> gpu_affinity;  // 2.28+: the GPU's CPUs as NCCL knows them (empty: it does not)
  std::optional<CpuSet> cpu_affinity;  // 2.28+: the rank's own CPUs at init; none with IGNORE_CPU_AFFINITY
};

struct NcclProcess {
  std::string host;
  int pid = 0;
  std::string file;     // the first file its lines came from
  std::string version;  // "2.28.3+cuda12.9", RCCL's "2.20.5-..." ("" when no line says)
  bool rccl = false;
  std::optional<unsigned> cuda_dev;
  std::string bus_id;  // "0000:1b:00.0", from its init lines ("" when none)
  std::vector<NcclComm> comms;
  // Its first affinity line in its largest communicator's init, else its first at all.
  std::optional<NcclAffinity> affinity;
  bool ignore_cpu_affinity = false;  // "NCCL_IGNORE_CPU_AFFINITY set by environment to 1", or 2.28+'s line without a CPU part
  std::string net;                   // "Using network NAME"
  std::map<std::string, std::vector<std::string>> net_devices;     // transport name -> device names by index
  std::map<std::string, std::map<unsigned, NcclNetUse>> net_used;  // transport name -> device index -> use
  std::map<std::string, bool> gdr_support;                         // device name -> "GPU Direct RDMA Enabled/Disabled for HCA"
  std::string gdr_said;                                            // the last "GPU Direct RDMA Disabled for GPU ..." message
  std::vector<unsigned> proxy_cores;                               // "[Proxy Progress] Device D CPU core C"
  std::string proxy_cpuset;                                        // "NCCL_PROXY_CPUSET = ..." as NCCL read it
  // The communicator with the most ranks (the world, for a DDP job); nullptr when none logged.
  const NcclComm* world() const;
  // The device names NCCL listed for transport `name` (the only list when it listed one).
  const std::vector<std::string>* devices(const std::string& name) const;
};

struct NcclLog {
  std::vector<NcclProcess> processes;  // by host, then rank (in the largest communicator), then PID
  unsigned lines = 0;                  // NCCL INFO lines read
  unsigned unattributed = 0;           // NCCL INFO lines without HOST:PID:TID, not given to any process
};

// The log files' text, (name, text) each, as one log: a process's lines may span files.
NcclLog parse_nccl_logs(const std::vector<std::pair<std::string, std::string>>& files);

// NCCL's busId ("%lx" of its int64 form: "1b000", "4e000") as a PCI address ("0000:1b:00.0");
// "" when it is not hex or too long.
std::string nccl_bus_id(std::string_view hex);

// A CPU set as NCCL printed it: a hex mask in 32-bit words ("ffff,ffffffff": ncclCpusetToStr,
// NCCL through 2.27 and RCCL) or a list ("0-19,40-59": 2.28+, some RCCL builds). A mask's
// first word has an even number of digits and the others eight; anything else is a list.
std::optional<CpuSet> nccl_cpu_set(std::string_view text);

// NCCL's version as (major, minor), from "2.28.3+cuda12.9"; nullopt when it does not parse.
std::optional<std::pair<unsigned, unsigned>> nccl_version(const std::string& version);

}  // namespace gpubind::check
