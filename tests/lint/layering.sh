#!/usr/bin/env bash
# The layering rules of docs/ARCHITECTURE.md that the linker cannot see (the link-time rule is
# the layer_link_* executables of tests/CMakeLists.txt):
#   R1 hwloc.h only in src/discover (the one hwloc adapter)
#   R2 libxml2 nowhere (NCCL files are read by src/discover/xml.cpp)
#   R3 syscall and platform headers (unistd, fcntl, dirent, sched, numaif, dlfcn, signal, poll,
#      netdb, pthread, spawn, sys/*, arpa/*, netinet/*, linux/*) only in src/sys and src/modules
#      (the sys layer's loadable parts)
#   R4 the pure layers (util, topo, plan, check, render, and the pure parts of watch, k8s, bench
#      and bind: watch.cpp and rules.cpp, k8s state.cpp, judge.cpp and dra_objects.cpp, bench
#      stats.cpp and record.cpp, bind's torchrun, launcher_binding, hostlist and pod_metadata,
#      rebind's plan and outcome) include no header of sys,
#      discover, probe, bind or cli, nor the impure parts of their own layers (watch's sampler and
#      loop, k8s's reader, bench's runner, rebind's move); but probe/state.hpp, the plain values a probe fills
#      and check judges, and bind's pure headers
#   R5 the pure layers read no environment, clock, thread, file or process: no getenv, setenv,
#      system, popen, fopen; no <thread>, <chrono>, <ctime>, <mutex>, <condition_variable>,
#      <future>, <fstream>, <filesystem>, <csignal>, <random>
#   R6 the process environment is changed (setenv, unsetenv, putenv) only in src/sys (hwloc's
#      HWLOC_* settings are applied in the child that loads, by sys::run_isolated)
#   R7 CLI11 (#include <CLI/...>) only in src/cli/args.cpp: it costs ~15 s of compiling in every
#      file that includes it
#   R8 the environment is read (getenv) and a clock read or slept on (steady_clock,
#      system_clock, this_thread) only in src/sys (sys/environment.hpp, sys/clock.hpp) and
#      src/modules
# Usage: layering.sh [ROOT]   (default: the repository; tests/lint/fixtures/* are broken roots)
set -u
root=${1:-"$(dirname "$0")/../.."}
cd "$root" || exit 2
bad=0
pure='src/((util|topo|plan|check|render)/|rebind/(rebind|outcome|enforce)\.|doctor/(doctor|facts)\.|watch/(watch|rules)\.|k8s/(state|judge|dra_objects)\.|bench/(stats|record)\.|bind/(torchrun|launcher_binding|hostlist|pod_metadata)\.)'
# rule NAME PATTERN FILES_REGEX ALLOWED_REGEX MESSAGE: PATTERN in a file matching FILES_REGEX and
# not ALLOWED_REGEX breaks the rule.
rule() {
  local hits
  hits=$(grep -rnE "$2" src --include='*.cpp' --include='*.hpp' --include='*.h' 2>/dev/null | grep -E "^($3)" | grep -vE "^($4)" || true)
  if [ -n "$hits" ]; then
    echo "layering $1: $5:"
    echo "$hits"
    bad=1
  fi
}
rule R1 '#include <hwloc' 'src/' 'src/discover/' "hwloc is used outside src/discover"
rule R2 '#include <libxml' 'src/' 'NONE' "libxml2 is not a dependency (src/discover/xml.cpp reads NCCL files)"
rule R3 '#include <((unistd|fcntl|dirent|sched|numaif|numa|dlfcn|signal|poll|netdb|pthread|spawn|termios|pwd|grp)\.h|(sys|arpa|netinet|linux)/)' \
  'src/' 'src/(sys|modules)/' "a syscall or platform header outside src/sys and src/modules"
rule R4 '#include "((sys|discover|probe|bind|cli)/|rebind/move\.|doctor/reader\.|watch/(sampler|run)\.|k8s/reader\.|bench/runner\.)' "$pure" \
  '[^:]*:[0-9]+:#include "(probe/state|bind/(torchrun|launcher_binding|hostlist|pod_metadata))\.hpp"' "a pure layer includes a header of sys, discover, probe, bind or cli, or an impure part of its own layer"
rule R5 '(\b(getenv|secure_getenv|setenv|unsetenv|putenv|popen|fopen)\s*\(|std::system\s*\(|#include <(thread|chrono|ctime|mutex|condition_variable|future|fstream|filesystem|csignal|random)>)' \
  "$pure" 'NONE' "a pure layer reads the environment, a clock, a file or starts a thread or process"
rule R6 '\b(setenv|unsetenv|putenv)\s*\(' 'src/' 'src/sys/' \
  "the process environment is changed outside src/sys"
rule R7 '#include <CLI/' 'src/' 'src/cli/args\.cpp:' "CLI11 is included outside src/cli/args.cpp (use cli::Args)"
rule R8 '(\bgetenv\s*\(|\b(steady_clock|system_clock|high_resolution_clock|this_thread)::)' 'src/' 'src/(sys|modules)/' \
  "the environment or a clock is read outside src/sys (use sys::env_value, sys::Clock)"
[ $bad = 0 ] && echo "layering: ok"
exit $bad
