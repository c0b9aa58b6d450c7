#!/usr/bin/env bash
# Open MPI's mpirun launching `gpubind exec`: every rank bound to the CPUs the plan gives it.
set -u
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || skip "mpirun not found (Debian package openmpi-bin)"

# mpirun pins ranks to cores by default (--bind-to core); gpubind rebinds them over the node's
# CPUs, so the result must not depend on it: run once with mpirun's default and once unbound.
for bind in "" "--bind-to none"; do
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe $bind -np 2 "$GPUBIND" exec -- \
    sh -c 'echo "R $OMPI_COMM_WORLD_LOCAL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2) $GPUBIND_CPUS"' 2>&1)
  rc=$?
  [ $rc = 0 ] || { fail "mpirun ${bind:-default} exited $rc: $out"; continue; }
  c0=$(echo "$out" | awk '$1=="R" && $2==0 {print $3}')
  c1=$(echo "$out" | awk '$1=="R" && $2==1 {print $3}')
  want0=$(plan_cpus 2 0)
  want1=$(plan_cpus 2 1)
  [ -n "$c0" ] && [ "$c0" = "$want0" ] && pass "mpirun ${bind:-default}: rank 0 on $c0 (plan: $want0)" || fail "rank 0 on '$c0', plan '$want0': $out"
  [ -n "$c1" ] && [ "$c1" = "$want1" ] && pass "mpirun ${bind:-default}: rank 1 on $c1 (plan: $want1)" || fail "rank 1 on '$c1', plan '$want1'"
  nproc_here=$(nproc)
  if [ "$nproc_here" -ge 2 ]; then
    disjoint "$c0" "$c1" && pass "ranks disjoint" || fail "ranks overlap: $c0 / $c1"
  fi
done

# exec's own failures under mpirun: not found is 127 for the rank.
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$GPUBIND" exec -- /nonexistent/cmd >/dev/null 2>&1
rc=$?
[ $rc = 127 ] && pass "command not found under mpirun -> 127" || fail "not found under mpirun -> $rc"
finish
