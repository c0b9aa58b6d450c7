#!/usr/bin/env bash
# The layering rule of docs/ARCHITECTURE.md, for what CMake cannot see: system headers.
#   hwloc.h        only in src/discover (the one hwloc adapter)
#   libxml2        nowhere (NCCL files are read by src/discover/xml.cpp)
#   syscall headers (unistd, fcntl, dirent, sched, numaif, dlfcn, sys/*) only in src/sys
#   topo, render, util never include sys/ or discover/ headers
set -u
cd "$(dirname "$0")/../.."
bad=0
check() {  # check PATTERN ALLOWED_DIR_REGEX MESSAGE
  local hits
  hits=$(grep -rnE "$1" src --include='*.cpp' --include='*.hpp' | grep -vE "^($2)" || true)
  if [ -n "$hits" ]; then
    echo "layering: $3:"
    echo "$hits"
    bad=1
  fi
}
check '#include <hwloc' 'src/discover/' "hwloc is used outside src/discover"
check '#include <libxml' 'NONE' "libxml2 is not a dependency (src/discover/xml.cpp reads NCCL files)"
check '#include <(unistd|fcntl|dirent|sched|numaif|numa|dlfcn)\.h>|#include <sys/' 'src/sys/' "a syscall header outside src/sys"
hits=$(grep -rnE '#include "(sys|discover|cli)/' src/util src/topo src/render || true)
if [ -n "$hits" ]; then
  echo "layering: a pure layer (util, topo, render) includes sys/, discover/ or cli/:"
  echo "$hits"
  bad=1
fi
[ $bad = 0 ] && echo "layering: ok"
exit $bad
