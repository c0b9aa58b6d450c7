#!/usr/bin/env bash
# Rankfiles against the real tools that read them. Open MPI 5 (PRRTE) takes only logical CPU
# numbers and is not packaged here, so the logical rankfile is checked against hwloc's own
# physical -> logical conversion (hwloc-calc) on each example machine's exported XML; the
# physical rankfile is run by this machine's Open MPI 4 mpirun.
set -u
. "$(dirname "$0")/lib.sh"
command -v hwloc-calc >/dev/null || skip "hwloc-calc not found (Debian package hwloc-nox)"
echo "note: Open MPI 5 is not available as a Debian 12 package; its logical numbering is checked with hwloc-calc"

for m in dgx-h100 dgx-a100-nps4 frontier-like gh200 workstation-socket0; do
  "$GPUBIND" topo --topology example:$m --format xml -q >"$WORK/$m.xml" || { fail "$m: xml export"; continue; }
  "$GPUBIND" plan --topology example:$m --format rankfile -q | grep '^rank' >"$WORK/phys" || { fail "$m: rankfile"; continue; }
  "$GPUBIND" plan --topology example:$m --format rankfile-logical -q | grep '^rank' >"$WORK/logi"
  bad=0
  while read -r rank slot; do
    phys=$(echo "$slot" | sed 's/.*slot=//')
    ours=$(grep -E "^rank [0-9]+=" "$WORK/logi" | awk -v r="$rank" -F'=' '$1 == "rank " r {print $NF}')
    locs=$(for part in $(echo "$phys" | tr ',' ' '); do printf 'pu:%s ' "$part"; done)
    want=$(hwloc-calc -i "$WORK/$m.xml" --physical-input --logical-output --intersect core $locs 2>&1)
    [ "$(expand_cpus "$ours" | tr -s ' ' | sed 's/ $//')" = "$(echo "$want" | tr ',' ' ')" ] || {
      bad=1; fail "$m rank $rank: ours $ours, hwloc-calc $want (physical $phys)"; }
  done < <(awk -F'[ =]' '{print $2, $0}' "$WORK/phys")
  [ $bad = 0 ] && pass "$m: logical rankfile = hwloc-calc's logical cores for every rank"
done

# Real captures as hwloc itself numbers them (issue 33 item 7): sub-NUMA clusters numbered
# round-robin (the Dell R740 in SNC2), NPS4 and interleaved sockets. Each rank's logical cores
# from gpubind against hwloc-calc on the original file, and each rank's CPUs within one NUMA node.
corpus=$(cd "$(dirname "$0")/../../.." && pwd)/shared/topologies
for f in nogpu-dell-r740-2xXeon6230-snc2-memside-cache.hwloc.xml clemson-palmetto-dell-r740-2xXeon6248-2xV100-interleaved-cpus.hwloc.xml \
         llnl-tioga-hpe-ex235a-epyc7a53-nps4-4xMI250X-8gcd.hwloc.xml; do
  [ -f "$corpus/$f" ] || { echo "note: $corpus/$f not found; skipped"; continue; }
  "$GPUBIND" plan --topology "$corpus/$f" --format rankfile -q | grep '^rank' >"$WORK/phys" || { fail "$f: rankfile"; continue; }
  "$GPUBIND" plan --topology "$corpus/$f" --format rankfile-logical -q | grep '^rank' >"$WORK/logi"
  bad=0
  while read -r rank slot; do
    phys=$(echo "$slot" | sed 's/.*slot=//')
    ours=$(awk -v r="$rank" -F'=' '$1 == "rank " r {print $NF}' "$WORK/logi")
    locs=$(for part in $(echo "$phys" | tr ',' ' '); do printf 'pu:%s ' "$part"; done)
    want=$(hwloc-calc -i "$corpus/$f" --physical-input --logical-output --intersect core $locs 2>&1)
    nodes=$(hwloc-calc -i "$corpus/$f" --physical-input --intersect numa $locs 2>&1)
    [ "$(expand_cpus "$ours" | tr -s ' ' | sed 's/ $//')" = "$(echo "$want" | tr ',' ' ')" ] || {
      bad=1; fail "$f rank $rank: ours $ours, hwloc-calc $want (physical $phys)"; }
    case "$nodes" in *,*) bad=1; fail "$f rank $rank: CPUs $phys span NUMA nodes $nodes" ;; esac
  done < <(awk -F'[ =]' '{print $2, $0}' "$WORK/phys")
  [ $bad = 0 ] && pass "$f: logical rankfile = hwloc-calc's logical cores, each rank on one NUMA node"
done

# The physical rankfile run by Open MPI 4: each rank where the plan puts it.
if command -v mpirun >/dev/null && [ "$(nproc)" -ge 2 ]; then
  "$GPUBIND" plan -n 2 --format rankfile --hosts localhost -q >"$WORK/rankfile"
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --rankfile "$WORK/rankfile" --mca rmaps_rank_file_physical 1 -np 2 \
    sh -c 'echo "R $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"' 2>&1)
  for r in 0 1; do
    got=$(echo "$out" | awk -v r=$r '$1=="R" && $2==r {print $3}')
    want=$(sed -n "s/^rank $r=localhost slot=//p" "$WORK/rankfile")
    [ -n "$got" ] && [ "$got" = "$want" ] && pass "mpirun 4 with gpubind's rankfile: rank $r on $got" || fail "rank $r: '$got' want '$want': $out"
  done
else
  echo "note: mpirun or a second CPU missing; the Open MPI 4 run is skipped"
fi
finish
