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

# A rankfile that puts rank 0 on CPU 1 and rank 1 on CPU 0: gpubind replaces that binding with
# the plan's and says so (never silently, so mpirun --report-bindings is not left wrong), keeps it
# with --keep-launcher-binding (both CPUs are on this machine's one NUMA node), and
# --report-bindings prints one line per rank.
if [ "$(nproc)" -ge 2 ]; then
  printf 'rank 0=localhost slot=1\nrank 1=localhost slot=0\n' >"$WORK/rankfile"
  rf=(--rankfile "$WORK/rankfile" --mca rmaps_rank_file_physical 1)
  probe='echo "R $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2) $GPUBIND_CPUS"'
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe "${rf[@]}" -np 2 "$GPUBIND" exec --report-bindings -- sh -c "$probe" 2>"$WORK/err")
  c0=$(echo "$out" | awk '$1=="R" && $2==0 {print $3}')
  [ "$c0" = "$(plan_cpus 2 0)" ] && pass "rankfile: rank 0 rebound to the plan's CPU $c0" || fail "rankfile rank 0 on '$c0': $out"
  [ "$(grep -c "gpubind replaces the launcher's binding" "$WORK/err")" = 2 ] && pass "rankfile: the replacement is reported" \
    || fail "no replacement note: $(cat "$WORK/err")"
  [ "$(grep -cE '^\[[^]]+:[0-9]+\] gpubind: rank [01] \(local [01] of 2\) bound to .*: \[' "$WORK/err")" = 2 ] \
    && pass "--report-bindings: one line per rank" || fail "report lines: $(cat "$WORK/err")"
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe "${rf[@]}" -np 2 "$GPUBIND" exec --keep-launcher-binding -- sh -c "$probe" 2>"$WORK/err")
  k0=$(echo "$out" | awk '$1=="R" && $2==0 {print $3 "/" $4}')
  k1=$(echo "$out" | awk '$1=="R" && $2==1 {print $3 "/" $4}')
  [ "$k0" = "1/1" ] && [ "$k1" = "0/0" ] && grep -q "keeps the launcher's CPUs" "$WORK/err" \
    && pass "--keep-launcher-binding keeps the rankfile's CPUs (rank 0 on 1, rank 1 on 0)" || fail "keep: '$k0' '$k1' $(cat "$WORK/err")"
fi

# exec's own failures under mpirun: not found is 127 for the rank.
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$GPUBIND" exec -- /nonexistent/cmd >/dev/null 2>&1
rc=$?
[ $rc = 127 ] && pass "command not found under mpirun -> 127" || fail "not found under mpirun -> $rc"
finish
