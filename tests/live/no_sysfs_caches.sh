#!/usr/bin/env bash
# The live tests on a machine whose sysfs has no cpu*/cache directories, as AMD EPYC and other
# cloud guests show it: this machine, in a private mount namespace (unshare -m) where each
# /sys/devices/system/cpu/cpuN/cache is an empty directory. hwloc then takes the caches from
# CPUID; every live test must still pass. Skips (77) where the namespace or the mounts are refused.
# Usage: no_sysfs_caches.sh GPUBIND_LIVE_TESTS
set -u
TESTS=${1:?usage: $0 GPUBIND_LIVE_TESTS}
command -v unshare >/dev/null || { echo "SKIP: unshare not found (Debian package util-linux)"; exit 77; }
ls -d /sys/devices/system/cpu/cpu[0-9]*/cache >/dev/null 2>&1 || { echo "SKIP: this machine's sysfs already has no cache directories: the plain live tests cover it"; exit 77; }
empty=$(mktemp -d)
trap 'rmdir "$empty"' EXIT
# The namespace's own mounts vanish with it; nothing outside sees them.
unshare -m --propagation private bash -c '
  empty=$1 tests=$2
  for c in /sys/devices/system/cpu/cpu[0-9]*/cache; do
    mount --bind "$empty" "$c" 2>/dev/null || { echo "SKIP: cannot hide $c here (mount refused: not root, or no CAP_SYS_ADMIN)"; exit 77; }
  done
  left=$(ls /sys/devices/system/cpu/cpu[0-9]*/cache | grep -c index)
  [ "$left" = 0 ] || { echo "FAIL: $left cache entries still visible"; exit 1; }
  echo "sysfs cache directories hidden: $(ls -d /sys/devices/system/cpu/cpu[0-9]*/cache | wc -l) CPUs"
  # No topology cache from outside the namespace: each load discovers anew.
  GPUBIND_CACHE_DIR=off exec "$tests" --gtest_brief=1' _ "$empty" "$TESTS"
rc=$?
[ $rc = 0 ] || [ $rc = 77 ] || echo "FAIL: live tests without sysfs cache directories (exit $rc)"
exit $rc
