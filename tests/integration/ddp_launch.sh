#!/usr/bin/env bash
# PyTorch DDP (Debian's python3-torch, gloo, CPU) under `gpubind launch`: both ranks train and
# each runs on the CPUs the plan gave it.
set -u
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
EXAMPLE=$(cd "$(dirname "$0")/../.." && pwd)/examples/ddp_train.py
$PY -c 'import torch.distributed' 2>/dev/null || skip "$PY has no torch (Debian package python3-torch)"

out=$(timeout 300 "$GPUBIND" launch -n 2 -- $PY "$EXAMPLE" --steps 10 2>"$WORK/err")
rc=$?
[ $rc = 0 ] && pass "DDP job exited 0" || fail "DDP job exited $rc: $(tail -5 "$WORK/err")"
for r in 0 1; do
  line=$(echo "$out" | grep "^DDP {\"rank\": $r,")
  [ -n "$line" ] || { fail "rank $r printed no report"; continue; }
  got=$(echo "$line" | sed -n 's/.*"cpus_allowed_list": "\([^"]*\)".*/\1/p')
  want=$(plan_cpus 2 $r)
  [ "$got" = "$want" ] && pass "rank $r trained on CPUs $got (plan: $want)" || fail "rank $r on '$got', plan '$want'"
  echo "$line" | grep -q '"world_size": 2' && pass "rank $r saw world size 2" || fail "rank $r: $line"
done
c0=$(echo "$out" | grep '^DDP {"rank": 0,' | sed -n 's/.*"cpus_allowed_list": "\([^"]*\)".*/\1/p')
c1=$(echo "$out" | grep '^DDP {"rank": 1,' | sed -n 's/.*"cpus_allowed_list": "\([^"]*\)".*/\1/p')
if [ "$(nproc)" -ge 2 ]; then
  disjoint "$c0" "$c1" && pass "DDP ranks on disjoint CPUs" || fail "DDP ranks overlap: $c0 / $c1"
fi
grep -q "exit 0" "$WORK/err" && pass "closing summary" || fail "no summary: $(cat "$WORK/err")"

# Thread pools (issue 55): without the user's size each rank gets its cores in every pool
# variable; a size the user exported is kept, and --report-bindings says which.
pools() { echo "$1" | grep "^DDP {\"rank\": $2," | sed -n 's/.*"pool_env": {\([^}]*\)}, "torch_threads": \([0-9]*\).*/\1 torch=\2/p'; }
for r in 0 1; do
  p=$(pools "$out" $r)
  n=$(echo "$p" | sed -n 's/.*"OMP_NUM_THREADS": "\([0-9]*\)".*/\1/p')
  cpus=$(echo "$out" | grep "^DDP {\"rank\": $r," | sed -n 's/.*"cpus_allowed_list": "\([^"]*\)".*/\1/p')
  [ -n "$n" ] && [ "$p" = "\"OMP_NUM_THREADS\": \"$n\", \"MKL_NUM_THREADS\": \"$n\", \"OPENBLAS_NUM_THREADS\": \"$n\" torch=$n" ] \
    && [ "$n" -le "$(expand_cpus "$cpus" | wc -w)" ] && pass "rank $r: every pool sized $n, its cores on CPUs $cpus" || fail "rank $r pools: $p (CPUs $cpus)"
done
out=$(OMP_NUM_THREADS=3 timeout 300 "$GPUBIND" launch -n 2 --report-bindings -- $PY "$EXAMPLE" --steps 5 2>"$WORK/err")
for r in 0 1; do
  p=$(pools "$out" $r)
  echo "$p" | grep -q '"OMP_NUM_THREADS": "3".*torch=3' && pass "rank $r kept the user's OMP_NUM_THREADS=3 (torch runs 3 threads)" \
    || fail "rank $r with OMP_NUM_THREADS=3: $p"
done
grep -q "OMP_NUM_THREADS=3 kept (set before gpubind" "$WORK/err" && pass "--report-bindings says the user's size was kept" \
  || fail "report: $(grep 'thread pools' "$WORK/err")"
finish
