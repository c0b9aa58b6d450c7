#pragma once
// gpubind's front binary: linked statically, so the dynamic loader costs nothing at the start of
// every rank (srun, mpirun and torchrun-style launchers run `gpubind exec` once per rank) and of
// every node's `launch`. It serves `exec` and `launch` itself while no module is needed (a cached
// topology: every start after a node's first); for any other command, or when exec or launch
// needs a module (discovery through hwloc, a GPU runtime), it executes the full, dynamically
// linked binary with the same arguments, before either has printed, bound or started anything. A
// static binary cannot load gpubind's modules reliably.
namespace gpubind::cli {

// The full binary's file name, looked for where the modules are (sys::module_candidates).
inline constexpr const char* kFullBinary = "gpubind-full";

// The front's main(): the process exit status.
int run_front(int argc, char** argv);

}  // namespace gpubind::cli
