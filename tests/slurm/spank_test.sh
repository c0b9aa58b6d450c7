#!/usr/bin/env bash
# The SPANK plugin on a live throw-away Slurm cluster (tests/slurm/cluster.sh): two slurmd
# "nodes" on this host, each claiming 2 sockets x 8 cores and 8 GPUs.
# Usage: spank_test.sh GPUBIND PLUGIN.so [FAKE-ROCM-SMI-DIR]
set -u
. "$(dirname "$0")/../integration/lib.sh"
PLUGIN=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
for t in srun slurmctld slurmd munged mungekey sinfo; do
  command -v $t >/dev/null || skip "$t not found (Debian packages slurmctld slurmd slurm-client munge)"
done
[ -f "$PLUGIN" ] || skip "plugin not built (needs libslurm-dev at configure time)"
[ "$(id -u)" = 0 ] || skip "the throw-away cluster runs its daemons as root"

chmod 755 "$WORK"  # munged wants every directory above its socket searchable
# The fake ROCm SMI (tests/fakes), for the daemons and so the tasks: two MI250X GCDs.
FAKE_ROCM_SMI=${3:-}
if [ -e "$FAKE_ROCM_SMI/librocm_smi64.so.1" ]; then
  export LD_LIBRARY_PATH="$FAKE_ROCM_SMI" GPUBIND_FAKE_ROCM_SMI="$HERE/../data/nvml/rocm-two-gcds.json"
fi
D="$WORK/cluster"
NODES=2 "$HERE/cluster.sh" start "$D" "$PLUGIN" || { fail "cluster did not start"; finish; }
trap '"$HERE/cluster.sh" stop "$D"; rm -rf "$WORK"' EXIT
. "$D/env.sh"
plugstack() { echo "required $PLUGIN $*" > "$D/etc/plugstack.conf"; }
probe='echo "$SLURM_NODEID $SLURM_LOCALID $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"'

# 1. srun --gpubind: every task bound by the plugin to the CPUs `gpubind plan` gives its local rank.
out=$(srun -Q -N2 --ntasks-per-node=2 --gpubind sh -c "$probe" 2>"$WORK/err")
rc=$?
[ $rc = 0 ] || fail "srun --gpubind exited $rc: $(cat "$WORK/err")"
for node in 0 1; do
  for r in 0 1; do
    line=$(echo "$out" | awk -v n=$node -v r=$r '$1==n && $2==r')
    got=$(echo "$line" | awk '{print $3}')
    env=$(echo "$line" | awk '{print $4}')
    want=$(plan_cpus 2 $r)
    [ -n "$got" ] && [ "$got" = "$want" ] && [ "$env" = "$want" ] && pass "node $node rank $r bound to $got (plan: $want)" \
      || fail "node $node rank $r: actual '$got', GPUBIND_CPUS '$env', plan '$want': $out"
  done
  c0=$(echo "$out" | awk -v n=$node '$1==n && $2==0 {print $3}')
  c1=$(echo "$out" | awk -v n=$node '$1==n && $2==1 {print $3}')
  [ "$(nproc)" -lt 2 ] || { disjoint "$c0" "$c1" && pass "node $node: tasks disjoint" || fail "node $node overlap: $c0 / $c1"; }
done

# 2. 16 tasks on two nodes (8 per node): each task's binding equals the plan for its local rank.
out=$(srun -Q -N2 --ntasks-per-node=8 --gpubind sh -c "$probe" 2>"$WORK/err")
bad=0
for r in $(seq 0 7); do
  want=$(plan_cpus 8 $r)
  n=$(echo "$out" | awk -v r=$r -v w="$want" '$2==r && $3==w && $4==w' | wc -l)
  [ "$n" = 2 ] || { bad=1; fail "rank $r: expected 2 tasks on $want: $out"; }
done
[ $bad = 0 ] && pass "srun -N2 --ntasks-per-node=8 --gpubind: all 16 tasks follow the plan"

# 3. srun gpubind exec -- CMD without the plugin gives the same binding as --gpubind.
via_exec=$(srun -Q -N2 --ntasks-per-node=2 "$GPUBIND" exec -- sh -c "$probe" 2>"$WORK/err" | sort)
via_plugin=$(srun -Q -N2 --ntasks-per-node=2 --gpubind sh -c "$probe" 2>>"$WORK/err" | sort)
[ -n "$via_exec" ] && [ "$via_exec" = "$via_plugin" ] && pass "srun gpubind exec == srun --gpubind" \
  || fail "exec vs plugin differ: [$via_exec] [$via_plugin] $(cat "$WORK/err")"

# 4. --gpubind=none leaves tasks unbound.
all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
out=$(srun -Q -N1 -n2 --gpubind=none sh -c "$probe" 2>&1)
[ "$(echo "$out" | awk -v a="$all" '$3==a && $4=="unset"' | wc -l)" = 2 ] && pass "--gpubind=none: unbound" || fail "none: $out"

# 5. No option and no site default: the plugin does nothing.
out=$(srun -Q -N1 -n2 sh -c "$probe" 2>&1)
[ "$(echo "$out" | awk '$4=="unset"' | wc -l)" = 2 ] && pass "no --gpubind: nothing applied" || fail "no option: $out"

# 6. A bad --gpubind value is refused by srun.
srun -Q -N1 -n1 --gpubind=bogus true >"$WORK/out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "gpubind" "$WORK/out" && pass "--gpubind=bogus refused" || fail "bogus accepted (rc $rc): $(cat "$WORK/out")"

# 7. Site default: every step bound without users changing scripts.
plugstack default=closest
out=$(srun -Q -N1 -n2 sh -c "$probe" 2>"$WORK/err")
[ "$(echo "$out" | awk '$4!="unset"' | wc -l)" = 2 ] && pass "plugstack default=closest binds plain srun" || fail "site default: $out"
# ... and says so when it narrows a task below the step's CPUs.
[ "$(grep -c 'site default closest binds local rank' "$WORK/err")" = 2 ] && pass "site default: narrowing said on stderr" \
  || fail "site default narrowing not reported: $(cat "$WORK/err")"

# 7b. An explicit user --cpu-bind wins over the site default (Slurm's mask is what the task gets).
out=$(srun -Q -N1 -n2 --cpu-bind=mask_cpu:0x2,0x1 sh -c "$probe" 2>"$WORK/err")
[ "$(echo "$out" | awk '$4=="unset"' | wc -l)" = 2 ] && pass "site default: an explicit --cpu-bind wins" \
  || fail "site default overrode --cpu-bind: $out $(cat "$WORK/err")"
out=$(srun -Q -N1 -n2 --gpubind=none sh -c "$probe" 2>&1)
[ "$(echo "$out" | awk '$4=="unset"' | wc -l)" = 2 ] && pass "site default: --gpubind=none opts out" || fail "none under default: $out"

# 7c. One task per node runs its own launcher: left alone, and `gpubind launch` inside it plans
#     over the whole allocation (its two ranks disjoint, not both squeezed onto one CPU).
out=$(srun -Q -N1 -n1 -c2 sh -c "$probe" 2>&1)
[ "$(echo "$out" | awk '$4=="unset"' | wc -l)" = 1 ] && pass "site default: a single-task step is left to its launcher" \
  || fail "single-task step bound: $out"
if [ "$(nproc)" -ge 2 ]; then
  out=$(srun -Q -N1 -n1 -c2 "$GPUBIND" launch -n 2 --quiet -- sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2' 2>/dev/null)
  c0=$(echo "$out" | sed -n 1p); c1=$(echo "$out" | sed -n 2p)
  [ -n "$c0" ] && [ -n "$c1" ] && disjoint "$c0" "$c1" && pass "launch inside a single-task step: ranks on $c0 and $c1" \
    || fail "launch inside a single-task step: '$out'"
fi

# 7d. gpubind.conf: binding = off disables even an explicit --gpubind; a broken file is a
#     warning and an unbound task (strict: a failed task).
printf 'binding = off\n' >"$WORK/off.conf"
plugstack "default=closest config=$WORK/off.conf"
out=$(srun -Q -N1 -n2 --gpubind sh -c "$probe" 2>&1)
[ "$(echo "$out" | awk '$4=="unset"' | wc -l)" = 2 ] && pass "config binding = off: the plugin binds nothing" || fail "off config: $out"
printf 'polcy = numa\n' >"$WORK/bad.conf"
plugstack "config=$WORK/bad.conf"
out=$(srun -Q -N1 -n1 --gpubind sh -c "$probe" 2>"$WORK/err")
[ "$(echo "$out" | awk '{print $4}')" = unset ] && grep -q "bad.conf:1: unknown key 'polcy'" "$WORK/err" \
  && pass "broken gpubind.conf: warning names the line, task unbound" || fail "bad config: $out $(cat "$WORK/err")"
printf 'policy = numa\n' >"$WORK/numa.conf"
plugstack "config=$WORK/numa.conf"
out=$(srun -Q -N1 -n2 --gpubind sh -c 'echo "$SLURM_LOCALID ${GPUBIND_POLICY:-unset}"' 2>&1)
[ "$(echo "$out" | awk '$2=="numa"' | wc -l)" = 2 ] && pass "config policy = numa: a bare --gpubind uses it" || fail "config policy: $out"
out=$(srun -Q -N1 -n2 --gpubind=closest sh -c 'echo "$SLURM_LOCALID ${GPUBIND_POLICY:-unset}"' 2>&1)
[ "$(echo "$out" | awk '$2=="closest"' | wc -l)" = 2 ] && pass "config policy: --gpubind=closest still wins" || fail "explicit mode: $out"

# 8. A fixture topology (admin-chosen) in dry-run: the plan follows its 2-socket, 8-GPU layout.
plugstack "topology=example:dgx-h100 dryrun"
out=$(srun -Q -N1 -n8 --gpubind sh -c "$probe" 2>&1)
bad=0
for r in $(seq 0 7); do
  want=$("$GPUBIND" plan --topology example:dgx-h100 -n 8 --format env --rank $r | sed -n 's/^export GPUBIND_CPUS=//p')
  [ "$(echo "$out" | awk -v r=$r '$2==r {print $4}')" = "$want" ] || { bad=1; fail "dry-run rank $r: want $want: $out"; }
done
[ $bad = 0 ] && pass "dry run with a DGX H100 topology: GPUBIND_CPUS follow its layout"

# 8a. GPUs by UUID in the task's environment: the plugin asks this node's GPU library which GPU
#     each is, as `gpubind plan --gpu-runtime` does. Slurm clears CUDA_VISIBLE_DEVICES and
#     ROCR_VISIBLE_DEVICES for a step without GPUs (it sets them itself, to its gres UniqueId for
#     MIG), so the user's HIP_VISIBLE_DEVICES with ROCm SMI's UUIDs carries the test.
if [ -n "${GPUBIND_FAKE_ROCM_SMI:-}" ]; then
  plugstack "topology=example:frontier-like dryrun"
  for id in GPU-5b7a1c2d3e4f6071 GPU-5b7a1c2d3e4f6072; do
    out=$(HIP_VISIBLE_DEVICES=$id srun -Q -N1 -n1 --gpubind sh -c "$probe" 2>"$WORK/err")
    want=$(HIP_VISIBLE_DEVICES=$id "$GPUBIND" plan --topology example:frontier-like --gpu-runtime -n 1 --format env --rank 0 2>/dev/null |
      sed -n 's/^export GPUBIND_CPUS=//p')
    [ -n "$want" ] && [ "$(echo "$out" | awk '{print $4}')" = "$want" ] && pass "HIP_VISIBLE_DEVICES=$id: the task follows ROCm SMI's GPU ($want)" \
      || fail "UUID $id: want $want: $out $(cat "$WORK/err")"
  done
else
  echo "SKIP 8a: no fake ROCm SMI given"
fi

# 8b. The plan's warnings reach the task's stderr (a VM's GPUs without locality).
plugstack "topology=example:cloud-vm-unknown-locality dryrun"
srun -Q -N1 -n2 --gpubind true 2>"$WORK/err" >/dev/null
[ "$(grep -c 'gpubind: warning: GPU locality is unknown' "$WORK/err")" = 2 ] && pass "plan warnings reach each task's stderr" \
  || fail "warnings in the task: $(cat "$WORK/err")"

# 9. sbatch --gpubind: the job's choice reaches the steps inside it.
plugstack
#    The batch script itself is no task: it keeps the job's CPUs and gets no GPUBIND_* (it was
#    bound as local rank 0 of the job's 2 tasks, and everything it ran directly with it).
out=$(sbatch -Q --wait -N1 -n2 --gpubind -o "$WORK/batch.out" \
  --wrap "echo batch \$(grep Cpus_allowed_list /proc/self/status | cut -f2) \${GPUBIND_CPUS:-unset}; srun -Q sh -c '$probe'" 2>&1)
rc=$?
[ $rc = 0 ] && [ "$(awk '$1 ~ /^[0-9]+$/ && $4!="unset"' "$WORK/batch.out" | wc -l)" = 2 ] && pass "sbatch --gpubind carries to srun steps" \
  || fail "sbatch (rc $rc): $out $(cat "$WORK/batch.out" 2>/dev/null)"
[ "$(awk '$1 == "batch" {print $2, $3}' "$WORK/batch.out")" = "0-$(($(nproc) - 1)) unset" ] \
  && pass "the batch script keeps the job's CPUs ($(awk '$1 == "batch" {print $2}' "$WORK/batch.out")) and no GPUBIND_*" \
  || fail "batch script bound: $(cat "$WORK/batch.out")"

# 10. A binding that cannot be made: a warning and an unbound task, or with strict a failed task.
plugstack "topology=$WORK/no-such-topology.json"
out=$(srun -Q -N1 -n1 --gpubind sh -c "$probe" 2>"$WORK/err")
rc=$?
[ $rc = 0 ] && grep -q "task runs unbound" "$WORK/err" && [ "$(echo "$out" | awk '{print $4}')" = unset ] \
  && pass "unappliable binding: warning, task runs unbound" || fail "warning case (rc $rc): $out $(cat "$WORK/err")"
plugstack "strict topology=$WORK/no-such-topology.json"
srun -Q -N1 -n1 --gpubind true >"$WORK/out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "gpubind: error" "$WORK/out" && pass "strict: the task fails with a clear message" \
  || fail "strict (rc $rc): $(cat "$WORK/out")"

# 11. A broken site argument: a clear error in srun's output.
plugstack "mem=sometimes"
srun -Q -N1 -n1 --gpubind true >"$WORK/out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "mem=sometimes" "$WORK/out" && pass "broken plugstack argument reported" \
  || fail "broken argument (rc $rc): $(cat "$WORK/out")"
plugstack

# 11b. check --slurm-job: the whole job at once (issue 30). Two nodes, two tasks each bound by
#      --gpubind; gpubind runs its node check on both through srun --overlap and prints one table.
#      The batch script and its srun (no SLURM_STEP_ID) are not tasks. Then one node's rank is
#      re-pinned to every CPU: DRIFTED, and OVERLAP with its neighbour, on that node only; exit 3.
#      watch --slurm-job merges the nodes' watch summaries the same way.
jobid=$(sbatch --parsable -N2 --ntasks-per-node=2 --gpubind -o /dev/null --wrap "srun -Q sleep 300" 2>"$WORK/err")
tasks_up() { [ "$(grep -l "SLURM_JOB_ID=$jobid" /proc/[0-9]*/environ 2>/dev/null | xargs -r grep -l 'SLURM_STEP_ID=0' 2>/dev/null | wc -l)" -ge 4 ]; }
if [ -n "$jobid" ] && wait_until 30 tasks_up; then
  "$GPUBIND" check --slurm-job "$jobid" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  [ $rc = 0 ] && [ "$(grep -cE '^n[12] +[0-9]+ +[0-3] +[01] .* OK$' "$WORK/out")" = 4 ] && grep -q "4 process(es) on 2 of 2 node(s): 4 OK" "$WORK/out" \
    && pass "check --slurm-job $jobid: 4 tasks on 2 nodes, one table, all OK" || fail "check --slurm-job (rc $rc): $(cat "$WORK/out" "$WORK/err")"
  victim=$(awk '$1=="n2" && $3=="3" {print $2}' "$WORK/out")
  if [ -n "$victim" ]; then
    taskset -pc "0-$(($(nproc) - 1))" "$victim" >/dev/null
    "$GPUBIND" check --slurm-job "$jobid" --json >"$WORK/out" 2>"$WORK/err"
    rc=$?
    got=$(/usr/bin/python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s:%s:%s" % (p["node"], p["rank"], p["verdict"]) for p in j["processes"])))' "$WORK/out" 2>&1)
    [ $rc = 3 ] && [ "$got" = "n1:0:OK n1:1:OK n2:2:OVERLAP n2:3:DRIFTED,OVERLAP" ] && pass "one node's rank re-pinned: $got, exit 3" \
      || fail "re-pinned rank (rc $rc): $got $(cat "$WORK/err")"
    # watch --slurm-job: every node watches for two intervals; one table of the nodes' summaries.
    "$GPUBIND" watch --slurm-job "$jobid" --count 2 --interval 0.2 >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc = 3 ] && grep -Eq "^n2 +$victim +3 +1 .*DRIFTED" "$WORK/out" && [ "$(grep -cE '^n1 .* OK ' "$WORK/out")" = 2 ] \
      && grep -q "4 process(es) watched on 2 of 2 node(s)" "$WORK/out" \
      && pass "watch --slurm-job: the nodes' summaries in one table, n2's rank 3 DRIFTED, exit 3" \
      || fail "watch --slurm-job (rc $rc): $(cat "$WORK/out" "$WORK/err")"
  else
    fail "no rank 3 on n2 in: $(cat "$WORK/out")"
  fi
else
  fail "the job's tasks did not start (job '$jobid'): $(cat "$WORK/err")"
fi
[ -n "$jobid" ] && scancel "$jobid"
# An array task named as squeue prints it (A_1): checked as the job of its own id (srun said
# "Invalid numeric value"); the array's id alone names several jobs: refused, naming them.
array=$(sbatch --parsable -N1 -n1 --array=1-2 --gpubind -o /dev/null --wrap "srun -Q sleep 300" 2>"$WORK/err")
array_up() { [ "$(squeue -h -r -j "$array" -t R | wc -l)" = 2 ]; }
if [ -n "$array" ] && wait_until 30 array_up; then
  own=$(squeue -h -r -j "${array}_1" -o %A)
  task_up() { grep -l "SLURM_JOB_ID=$own" /proc/[0-9]*/environ 2>/dev/null | xargs -r grep -l 'SLURM_STEP_ID=0' >/dev/null 2>&1; }
  wait_until 30 task_up
  "$GPUBIND" check --slurm-job "${array}_1" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  [ $rc = 0 ] && grep -q "1 process(es) on 1 of 1 node(s): 1 OK" "$WORK/out" \
    && pass "check --slurm-job ${array}_1: the array task (job $own) checked" || fail "array task (rc $rc): $(cat "$WORK/out" "$WORK/err")"
  "$GPUBIND" check --slurm-job "$array" >"$WORK/out" 2>&1
  rc=$?
  # Slurm gives the array's own id to one of its tasks (the last, here): squeue lists each task.
  [ $rc = 2 ] && grep -q "a job array: its tasks .*${array}_1 (job $own, running)" "$WORK/out" && grep -q "${array}_2 (job [0-9]*, running)" "$WORK/out" \
    && pass "check --slurm-job $array (the array): refused, its tasks named" || fail "array id (rc $rc): $(cat "$WORK/out")"
else
  fail "the array's tasks did not start ('$array'): $(cat "$WORK/err")"
fi
[ -n "$array" ] && scancel "$array"
"$GPUBIND" check --slurm-job 99999999 >"$WORK/out" 2>&1
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$WORK/out")" = 1 ] && grep -q "^gpubind: error: --slurm-job 99999999: " "$WORK/out" \
  && pass "a job that is not running: $(cat "$WORK/out")" || fail "unknown job (rc $rc): $(cat "$WORK/out")"

# 12. gres.conf written by `gpubind slurm gres-conf` for this node shape is accepted by slurmd.
"$HERE/cluster.sh" stop "$D"
D2="$WORK/cluster2"
if GRES_FROM="$GPUBIND slurm gres-conf --topology example:slurm-2x8-8gpu" NODES=1 "$HERE/cluster.sh" start "$D2"; then
  trap '"$HERE/cluster.sh" stop "$D2"; rm -rf "$WORK"' EXIT
  export SLURM_CONF="$D2/etc/slurm.conf"
  grep -q "Cores=8-15" "$D2/etc/gres.conf" && pass "gres.conf from gpubind: $(grep -c Name=gpu "$D2/etc/gres.conf") GPU lines" \
    || fail "gres.conf: $(cat "$D2/etc/gres.conf")"
  grep -q "Gres=gpu:nvidia_h100_80gb_hbm3:8 " "$D2/etc/slurm.conf" && pass "slurm.conf takes gres-conf's Gres=gpu:nvidia_h100_80gb_hbm3:8" \
    || fail "slurm.conf node line: $(grep ^NodeName "$D2/etc/slurm.conf")"
  out=$(srun -Q -N1 -n1 --gres=gpu:8 sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>&1)
  [ "$out" = "0,1,2,3,4,5,6,7" ] && pass "slurmd accepted it: node idle, 8 GPUs allocatable" || fail "srun with generated gres.conf: $out"
  out=$(srun -Q -N1 -n1 --gres=gpu:nvidia_h100_80gb_hbm3:2 sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>&1)
  [ "$out" = "0,1" ] && pass "srun --gres=gpu:nvidia_h100_80gb_hbm3:2 allocates 2 typed GPUs" || fail "typed gres: $out"
  grep -qi "invalid\|fatal\|ignoring extra gres" "$D2"/log/slurmd-n1.log "$D2"/log/slurmctld.log \
    && fail "errors in logs: $(grep -i 'invalid\|fatal\|ignoring extra gres' "$D2"/log/*.log | head -3)"
else
  fail "cluster with gpubind's gres.conf did not start"
fi
"$HERE/cluster.sh" stop "$D2"

# 13. set_mempolicy refused inside slurmstepd (issues 12 and 32): a seccomp filter on slurmd,
#     inherited by slurmstepd and the tasks, refuses it with EPERM as Docker's default profile
#     does without CAP_SYS_NICE. On a machine with one NUMA node (this VM) gpubind never calls
#     it, so slurmd runs in a mount namespace of its own where /sys/devices/system/node/online
#     says "0-1". A refused memory policy keeps the task's CPU binding, says so once per task
#     and exports GPUBIND_MEM_POLICY=refused, with strict or without; require-mem-policy makes
#     it a failed binding: the task runs unbound with a warning, or fails with strict.
D3="$WORK/cluster3"
mprobe='echo "$SLURM_LOCALID $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset} ${GPUBIND_MEM_POLICY:-unset}"'
echo 0-1 >"$WORK/two-nodes"
printf '#!/bin/sh\nmount --bind %s /sys/devices/system/node/online && exec "$@"\n' "$WORK/two-nodes" >"$WORK/two-nodes.sh"
chmod +x "$WORK/two-nodes.sh"
if ! /usr/bin/python3 -c 'import seccomp' 2>/dev/null; then
  echo "SKIP: case 13: python3-seccomp is not installed"
elif ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: case 13: a two-node view of /sys for slurmd needs unshare -m (root)"
elif SLURMD_WRAP="unshare -m --propagation private $WORK/two-nodes.sh /usr/bin/python3 $HERE/seccomp_deny.py set_mempolicy EPERM --" \
  NODES=1 "$HERE/cluster.sh" start "$D3" "$PLUGIN"; then
  trap '"$HERE/cluster.sh" stop "$D3"; rm -rf "$WORK"' EXIT
  export SLURM_CONF="$D3/etc/slurm.conf"
  all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
  for extra in "" " strict"; do
    echo "required $PLUGIN default=closest$extra" >"$D3/etc/plugstack.conf"
    out=$(srun -Q -N1 -n2 sh -c "$mprobe" 2>"$WORK/err")
    rc=$?
    kept=$(echo "$out" | awk '$2==$3 && $4=="refused"' | wc -l)
    if [ $rc = 0 ] && [ "$kept" = 2 ] && ! grep -q 'runs unbound\|^gpubind: error' "$WORK/err" &&
      [ "$(grep -c 'gpubind: warning: local rank [01]: memory policy refused by the container (set_mempolicy [0-9]*: Operation not permitted)' "$WORK/err")" = 2 ]; then
      pass "set_mempolicy refused in slurmstepd${extra:+ ($extra)}: both tasks keep their CPUs, one warning each, GPUBIND_MEM_POLICY=refused"
    else fail "refused set_mempolicy${extra:+ ($extra)} (rc $rc): $out / $(cat "$WORK/err")"; fi
  done
  echo "required $PLUGIN default=closest require-mem-policy" >"$D3/etc/plugstack.conf"
  out=$(srun -Q -N1 -n2 sh -c "$probe" 2>"$WORK/err")
  rc=$?
  unbound=$(echo "$out" | awk -v a="$all" '$3==a && $4=="unset"' | wc -l)
  if [ $rc = 0 ] && [ "$unbound" = 2 ] &&
    [ "$(grep -c 'gpubind: warning (task runs unbound): .*set_mempolicy .*Operation not permitted' "$WORK/err")" = 2 ]; then
    pass "require-mem-policy: set_mempolicy refused -> warning, and both tasks really unbound (CPUs $all)"
  else fail "require-mem-policy, refused set_mempolicy (rc $rc): $out / $(cat "$WORK/err")"; fi
  echo "required $PLUGIN default=closest strict require-mem-policy" >"$D3/etc/plugstack.conf"
  srun -Q -N1 -n2 true >"$WORK/out" 2>&1
  rc=$?
  [ $rc != 0 ] && grep -q "gpubind: error: .*set_mempolicy" "$WORK/out" && pass "strict require-mem-policy: set_mempolicy refused -> the task fails" \
    || fail "strict require-mem-policy, refused set_mempolicy (rc $rc): $(cat "$WORK/out")"
else
  fail "cluster with a seccomp-filtered slurmd did not start"
fi
"$HERE/cluster.sh" stop "$D3"

# 14. Slurm as sites run it (issue 30): TaskPlugin=task/affinity on a node shaped like this
#     machine (2 sockets x 1 core on two CPUs, so Slurm's own masks are real), 2 GPUs, GPU 0 near
#     CPU 0 and GPU 1 near CPU 1 in gres.conf and in the admin's topology (this machine's own with
#     two stand-in GPUs), plugstack.conf default=closest. task/affinity binds every task
#     (SLURM_CPU_BIND=quiet,mask_cpu:0x1,0x2); the site default must still bind, follow Slurm's
#     per-task GPUs, and stand back for the user's --cpu-bind.
D4="$WORK/cluster4"
if [ "$(cat /sys/devices/system/cpu/online)" != "0-1" ]; then
  echo "SKIP 14: task/affinity's case needs a machine of exactly CPUs 0-1 (this one: $(cat /sys/devices/system/cpu/online))"
else
  "$GPUBIND" topo --json | /usr/bin/python3 "$HERE/topology_json.py" two-gpus >"$WORK/two-gpus.json"
  if TASK_PLUGIN=task/affinity SOCKETS=2 CORES=1 GPUS=2 NODES=2 CONF_EXTRA=SlurmdDebug=debug \
    "$HERE/cluster.sh" start "$D4" "$PLUGIN" default=closest "topology=$WORK/two-gpus.json"; then
    trap '"$HERE/cluster.sh" stop "$D4"; rm -rf "$WORK"' EXIT
    export SLURM_CONF="$D4/etc/slurm.conf"
    tprobe='echo "$SLURM_LOCALID $SLURM_CPU_BIND_LIST $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset} ${GPUBIND_GPU:-unset}"'
    # Each task's line: local rank, Slurm's mask list, its CPUs now, GPUBIND_CPUS, GPUBIND_GPU.
    expect_tasks() {  # expect_tasks WHAT OUT "CPUS GPU" (of task 0) "CPUS GPU" (of task 1)
      local what=$1 out=$2 ok=1 r=0 want line
      for want in "$3" "$4"; do
        line=$(echo "$out" | awk -v r=$r '$1==r {print $3, $4, $5}')
        set -- $want  # CPUS GPU: the task's CPUs, and GPUBIND_CPUS and GPUBIND_GPU (or both unset)
        if [ "$2" = unset ]; then [ "$line" = "$1 unset unset" ] || ok=0; else [ "$line" = "$1 $1 $2" ] || ok=0; fi
        r=$((r + 1))
      done
      [ $ok = 1 ] && pass "$what" || fail "$what: $out $(cat "$WORK/err")"
    }
    out=$(srun -Q -w n1 -N1 -n2 sh -c "$tprobe" 2>"$WORK/err")
    [ "$(echo "$out" | awk '{print $2}' | sort -u)" = "0x1,0x2" ] && pass "task/affinity binds every task itself (mask_cpu:0x1,0x2)" \
      || fail "task/affinity's own masks: $out"
    expect_tasks "task/affinity + site default: the plugin binds each task to its GPU's CPU" "$out" "0 0000:e1:00.0" "1 0000:e2:00.0"
    out=$(srun -Q -w n1 -N1 -n2 --cpu-bind=map_cpu:1,0 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "task/affinity + the user's --cpu-bind=map_cpu:1,0: the site default stands back" "$out" "1 unset" "0 unset"
    out=$(srun -Q -w n1 -N1 -n2 --gpus-per-task=1 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--gpus-per-task=1: each task on its own GPU's CPU" "$out" "0 0000:e1:00.0" "1 0000:e2:00.0"
    out=$(srun -Q -w n1 -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--gpu-bind=map_gpu:1,0: task 0 on GPU 1's CPU 1, task 1 on GPU 0's CPU 0 (Slurm gave 0 and 1)" "$out" \
      "1 0000:e2:00.0" "0 0000:e1:00.0"
    grep -q "are assumed" "$WORK/err" && fail "map_gpu names every task's GPU, yet a guess was said: $(cat "$WORK/err")"
    out=$(srun -Q -w n1 -N1 -n2 --gres=gpu:2 --gpu-bind=mask_gpu:0x2,0x1 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--gpu-bind=mask_gpu:0x2,0x1: each task on its GPU's CPU" "$out" "1 0000:e2:00.0" "0 0000:e1:00.0"
    out=$(srun -Q -w n1 -N1 -n2 --gres=gpu:2 --gpu-bind=none sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--gpu-bind=none: both GPUs seen by both tasks, rank i on GPU i" "$out" "0 0000:e1:00.0" "1 0000:e2:00.0"
    # single:1 narrows by the task's CPUs (task/affinity's masks): the others' GPUs are assumed, and said.
    out=$(srun -Q -w n1 -N1 -n2 --gres=gpu:2 --gpu-bind=single:1 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--gpu-bind=single:1: each task on its GPU's CPU" "$out" "0 0000:e1:00.0" "1 0000:e2:00.0"
    [ "$(grep -c "gpu:single:1 gave this task GPU(s) .* are assumed" "$WORK/err")" = 2 ] && pass "single:1: the assumption is said in each task" \
      || fail "single:1 warning: $(cat "$WORK/err")"
    out=$(srun -Q -w n1 -N1 -n2 --exclusive --gpus-per-task=1 sh -c "$tprobe" 2>"$WORK/err")
    expect_tasks "--exclusive --gpus-per-task=1: as on a shared node" "$out" "0 0000:e1:00.0" "1 0000:e2:00.0"
    # --gpubind=verbose: one line per task with host, job.step, global and local rank, then the
    # binding in exec's words (GPU with PCI address and UUID, CPUs, memory, NIC); the same in
    # slurmd's log at debug level.
    out=$(srun -Q -w n1 -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 --gpubind=verbose true 2>&1)
    line='gpubind: [^ ]+ job [0-9]+\.0 rank 0 \(local 0\): GPU 1 \(0000:e2:00\.0, GPU-00000001-test\), CPUs 1, memory preferred [0-9]+[^,]*, NIC '
    [ "$(echo "$out" | grep -Ec "$line")" = 1 ] && [ "$(echo "$out" | grep -c '^gpubind: .* job .* rank 1 (local 1): GPU 0 (')" = 1 ] \
      && pass "--gpubind=verbose: $(echo "$out" | grep 'rank 0 ')" || fail "verbose lines: $out"
    grep -Eq "gpubind: [^ ]+ job [0-9]+\.0 rank 1 \(local 1\): GPU 0 \(0000:e1:00\.0" "$D4/log/slurmd-n1.log" \
      && pass "slurmd's log has the task's line at debug level" || fail "slurmd log: $(grep gpubind "$D4/log/slurmd-n1.log" | tail -3)"
    # A shared node under task/affinity alone (no cgroup keeps a task in its job's CPUs): job A
    # holds core 0; job B's lone task is bound to its own core 1, and CPU 0 is said held back.
    srun -Q -w n1 -N1 -n1 sleep 120 &
    holder=$!
    held() { [ "$(squeue -h -t R | wc -l)" -ge 1 ]; }
    wait_until 20 held || fail "job A did not start"
    out=$(srun -Q -w n1 -N1 -n1 --gpubind=verbose sh -c 'echo "$(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"' 2>"$WORK/err")
    [ "$out" = "1 1" ] && grep -q "CPUs 0 held back: not among the step's cores" "$WORK/err" \
      && pass "shared node, task/affinity only: job B's rank stays on its own core 1, CPU 0 (job A's) held back" \
      || fail "shared node: '$out' $(cat "$WORK/err")"
    scancel --quiet "$(squeue -h -o %i | head -1)"
    wait $holder 2>/dev/null
    # A heterogeneous step: --gpus-per-task=1 on n1, --gpu-bind=map_gpu:1,0 on n2; each
    # component's tasks on their own GPU's CPU.
    out=$(srun -Q -w n1 -N1 -n2 --gpus-per-task=1 : -w n2 -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 \
      sh -c 'echo "$SLURMD_NODENAME $SLURM_LOCALID $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_GPU:-unset}"' 2>"$WORK/err" | sort)
    want="n1 0 0 0000:e1:00.0
n1 1 1 0000:e2:00.0
n2 0 1 0000:e2:00.0
n2 1 0 0000:e1:00.0"
    [ "$out" = "$want" ] && pass "heterogeneous step: each component's tasks on their own GPU's CPU" \
      || fail "heterogeneous step: '$out' $(cat "$WORK/err")"
    # bench --ab (issue 37) inside a step, as a user runs it on an allocated node: launch's ranks
    # stay within the CPUs task/affinity gave the step, under every policy, and the report counts
    # those CPUs (2 with -c2; 1 with -n1 alone, so 2 ranks are said to be oversubscribed).
    WORKER=$(cd "$(dirname "$GPUBIND")/../examples" 2>/dev/null && pwd)/gpubind_demo_worker
    if [ -x "$WORKER" ]; then
      ab_run() {  # ab_run SRUN-FLAGS...: bench --ab closest,none -n 2, 2 rounds; each rank's CPUs in $WORK/ab.cpus
        rm -f "$WORK/ab.cpus"
        srun -Q -w n1 -N1 -n1 "$@" "$GPUBIND" bench --ab closest,none -n 2 --rounds 2 --step-regex 'step [0-9]+ (?<ms>[0-9.]+) ms' --json \
          -- sh -c "echo \"\$LOCAL_RANK \$(grep Cpus_allowed_list /proc/self/status | cut -f2)\" >>$WORK/ab.cpus; exec $WORKER --steps 20 --print-steps" \
          >"$WORK/ab.json" 2>"$WORK/ab.err"
      }
      ab_check() {  # ab_check WHAT ALLOWED-CPUS "RANK CPUS" lines (sorted, each once per run)
        local what=$1 allowed=$2 got
        shift 2
        got=$(sort "$WORK/ab.cpus" 2>/dev/null | paste -sd' ')
        if /usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(not (j["machine"]["allowed_cpus"] == int(sys.argv[2]) and len(j["runs"]) == 4))' \
          "$WORK/ab.json" "$allowed" 2>/dev/null && [ "$got" = "$*" ]; then pass "$what"
        else fail "$what: ranks' CPUs '$got', want '$*': $(head -c 600 "$WORK/ab.json") $(cat "$WORK/ab.err")"; fi
      }
      ab_run -c2
      ab_check "bench --ab in a step of 2 CPUs (-c2): closest puts the ranks on CPUs 0 and 1, none leaves both theirs; 2 allowed" 2 \
        "0 0" "0 0" "0 0-1" "0 0-1" "1 0-1" "1 0-1" "1 1" "1 1"
      ab_run
      ab_check "bench --ab in a step of 1 CPU (-n1): every rank of both policies stays on the step's CPU 0; 1 allowed" 1 \
        "0 0" "0 0" "0 0" "0 0" "1 0" "1 0" "1 0" "1 0"
      grep -q "^gpubind: bench --ab: note: oversubscribed: 2 ranks on 1 allowed CPU(s)" "$WORK/ab.err" \
        && pass "bench --ab in a step of 1 CPU says its 2 ranks are oversubscribed" || fail "no oversubscription note: $(cat "$WORK/ab.err")"
    else
      echo "SKIP: bench --ab under task/affinity (the stand-in worker was not built: $WORKER)"
    fi
    # rebind (issue 35): a job whose user asked for no binding (--cpu-bind=none: task/affinity and
    # the site default both stand back) is moved while it runs, from a step of its own
    # (srun --overlap): each task by its SLURM_LOCALID onto its plan's CPU (a CPU-only plan here:
    # the stand-in GPUs are the admin's topology file's, not this machine's).
    srun -Q -w n1 -N1 -n2 --cpu-bind=none sh -c 'exec sleep 120' &
    job_step=$!
    both_running() { [ "$(pgrep -x sleep -P "$(pgrep -d, -x slurmstepd)" 2>/dev/null | wc -l)" -ge 2 ] || [ "$(pgrep -fx 'sleep 120' | wc -l)" -ge 2 ]; }
    wait_until 30 both_running || fail "the unbound job's tasks did not start"
    jid=$(squeue -h -t R -o %i | head -1)
    before=$(for p in $(pgrep -fx 'sleep 120'); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx "SLURM_JOB_ID=$jid" || continue
      grep Cpus_allowed_list /proc/$p/status | cut -f2; done | sort -u | tr '\n' ' ')
    srun -Q --overlap --jobid "$jid" -w n1 -N1 -n1 "$GPUBIND" rebind -q --match '^sleep 120$' >"$WORK/out" 2>"$WORK/err"
    rc=$?
    # The job's tasks only: another test running beside this one may have a `sleep 120` of its own.
    after=$(for p in $(pgrep -fx 'sleep 120'); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx "SLURM_JOB_ID=$jid" || continue
      echo "$(tr '\0' '\n' </proc/$p/environ | sed -n 's/^SLURM_LOCALID=//p'):$(grep Cpus_allowed_list /proc/$p/status | cut -f2)"; done | sort | tr '\n' ' ')
    [ $rc = 0 ] && [ "$before" = "0-1 " ] && [ "$after" = "0:0 1:1 " ] \
      && pass "rebind from a step of the job (srun --overlap): the unbound tasks (0-1) moved, local rank 0 to CPU 0 and 1 to CPU 1" \
      || fail "rebind under Slurm: rc $rc, before '$before', after '$after': $(cat "$WORK/out" "$WORK/err")"
    scancel --quiet "$jid"
    wait $job_step 2>/dev/null
    # The same, as docs/cli.md tells a user, for a batch job whose script starts its tasks with
    # srun: the script's `srun ... sleep 121` matches the pattern and carries the batch step's
    # SLURM_LOCALID=0 (rebind was refused, exit 4); srun clients and the batch script are no tasks.
    bjid=$(sbatch --parsable -w n1 -N1 -n2 -o /dev/null --wrap "srun -Q --cpu-bind=none sh -c 'exec sleep 121'" 2>"$WORK/err")
    tasks_running() { [ "$(pgrep -fx 'sleep 121' | wc -l)" -ge 2 ] && pgrep -f 'srun -Q --cpu-bind=none sh -c exec sleep 121' >/dev/null; }
    if [ -n "$bjid" ] && wait_until 30 tasks_running; then
      srun -Q --overlap --jobid "$bjid" -w n1 -N1 -n1 "$GPUBIND" rebind -q --match 'sleep 121' >"$WORK/out" 2>"$WORK/err"
      rc=$?
      after=$(for p in $(pgrep -fx 'sleep 121'); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx "SLURM_JOB_ID=$bjid" || continue; echo "$(tr '\0' '\n' </proc/$p/environ | sed -n 's/^SLURM_LOCALID=//p'):$(grep Cpus_allowed_list /proc/$p/status | cut -f2)"; done | sort | tr '\n' ' ')
      [ $rc = 0 ] && [ "$after" = "0:0 1:1 " ] && grep -q "an srun client" "$WORK/out" \
        && pass "rebind of a batch job's tasks: the script's srun client skipped ('an srun client'), the two tasks moved ($after)" \
        || fail "rebind of a batch job: rc $rc, after '$after': $(cat "$WORK/out" "$WORK/err")"
    else
      fail "the batch job's tasks did not start ('$bjid'): $(cat "$WORK/err")"
    fi
    [ -n "$bjid" ] && scancel --quiet "$bjid"
  else
    fail "cluster with task/affinity did not start"
  fi
  "$HERE/cluster.sh" stop "$D4"

  # 15. Core specialization (CoreSpecCount=1: Slurm keeps the last core, CPU 1, for the system and
  #     binds slurmd and slurmstepd there). Without task/cgroup the task's cgroup is the whole node;
  #     the plugin plans over the step's cores (S_STEP_ALLOC_CORES) and says what it held back.
  D5="$WORK/cluster5"
  if TASK_PLUGIN=task/affinity SOCKETS=2 CORES=1 GPUS=2 NODES=1 NODE_EXTRA=CoreSpecCount=1 "$HERE/cluster.sh" start "$D5" "$PLUGIN"; then
    trap '"$HERE/cluster.sh" stop "$D5"; rm -rf "$WORK"' EXIT
    export SLURM_CONF="$D5/etc/slurm.conf"
    out=$(srun -Q -N1 -n1 --gpubind=verbose sh -c 'echo "$(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"' 2>"$WORK/err")
    [ "$out" = "0 0" ] && grep -q "CPUs 1 held back: not among the step's cores" "$WORK/err" \
      && pass "CoreSpecCount=1: the rank gets CPU 0 only, and the specialized CPU 1 is said to be held back" \
      || fail "core specialization: '$out' $(cat "$WORK/err")"
  else
    fail "cluster with CoreSpecCount=1 did not start"
  fi
  "$HERE/cluster.sh" stop "$D5"

  # 16. TaskPlugin=task/cgroup,task/affinity (cgroup v1 cpuset, as this VM mounts it): each step
  #     runs in its own cpuset (slurm_n1/uid_0/job_N/step_M). Job A holds core 0; job B's single
  #     task is given both GPUs, GPU 0 near CPU 0, yet must be bound inside its step's cpuset
  #     (CPU 1), never outside it.
  D6="$WORK/cluster6"
  if ! grep -q ' /sys/fs/cgroup/cpuset cgroup .*cpuset' /proc/mounts; then
    echo "SKIP 16: no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset (Slurm 22.05's cgroup/v2 needs systemd's delegation)"
  elif CGROUP_CONF=$'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainCores=yes' TASK_PLUGIN=task/cgroup,task/affinity SOCKETS=2 \
    CORES=1 GPUS=2 NODES=1 "$HERE/cluster.sh" start "$D6" "$PLUGIN" "topology=$WORK/two-gpus.json"; then
    trap '"$HERE/cluster.sh" stop "$D6"; rm -rf "$WORK"' EXIT
    export SLURM_CONF="$D6/etc/slurm.conf"
    srun -Q -N1 -n1 sleep 120 &
    holder=$!
    held() { [ "$(squeue -h -t R | wc -l)" -ge 1 ]; }
    wait_until 20 held || fail "job A did not start"
    cg='c=$(grep :cpuset: /proc/self/cgroup | cut -d: -f3); echo "$c $(cat /sys/fs/cgroup/cpuset$c/cpuset.cpus) $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"'
    out=$(srun -Q -N1 -n1 --gres=gpu:2 --gpubind=verbose sh -c "$cg" 2>"$WORK/err")
    set -- $out
    case "$1" in */job_*/step_*) incg=1 ;; *) incg=0 ;; esac
    [ $incg = 1 ] && [ "$2" = 1 ] && [ "$3" = 1 ] && [ "$4" = 1 ] && grep -q "GPUs\? 0 (0000:e1:00.0.*CPUs 1," "$WORK/err" \
      && pass "task/cgroup: the task in cpuset $1 (CPU 1) is bound to CPU 1, not to GPU 0's CPU 0 held by job A" \
      || fail "task/cgroup: '$out' $(cat "$WORK/err")"
    scancel --quiet "$(squeue -h -o %i | head -1)"
    wait $holder 2>/dev/null
  else
    fail "cluster with task/cgroup did not start: $(tail -3 "$D6"/log/slurmd-n1.log 2>/dev/null)"
  fi
  "$HERE/cluster.sh" stop "$D6"
fi

# 17. A per-job verdict after the fact (issue 30): deploy/slurm's Prolog starts a watch of the
#     job's tasks on the node, its Epilog stops it, and the summary stays in the spool directory.
#     A task re-pins itself after start: the finished job's summary says DRIFTED for rank 1 only.
D7="$WORK/cluster7"
DEPLOY=$(cd "$HERE/../../deploy/slurm" && pwd)
printf '#!/bin/sh\nGPUBIND=%s GPUBIND_JOB_SPOOL=%s GPUBIND_JOB_INTERVAL=0.2 GPUBIND_JOB_LOG=intervals exec %s\n' \
  "$GPUBIND" "$WORK/spool" "$DEPLOY/gpubind-prolog.sh" >"$WORK/prolog"
printf '#!/bin/sh\nGPUBIND_JOB_SPOOL=%s exec %s\n' "$WORK/spool" "$DEPLOY/gpubind-epilog.sh" >"$WORK/epilog"
chmod 755 "$WORK/prolog" "$WORK/epilog"
if CONF_EXTRA="Prolog=$WORK/prolog
Epilog=$WORK/epilog" NODES=1 "$HERE/cluster.sh" start "$D7" "$PLUGIN"; then
  trap '"$HERE/cluster.sh" stop "$D7"; rm -rf "$WORK"' EXIT
  export SLURM_CONF="$D7/etc/slurm.conf"
  # Rank 1 re-pins itself, then both wait until the watch has judged an interval with the drift.
  seen="$WORK/spool/*/n1.jsonl"
  srun -Q -N1 -n2 --gpubind sh -c '[ "$SLURM_LOCALID" = 1 ] && taskset -pc 0-'"$(($(nproc) - 1))"' $$ >/dev/null
    i=0; until grep -q DRIFTED '"$seen"' 2>/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done' 2>"$WORK/err"
  summary_done() { ls "$WORK"/spool/*/n1.summary >/dev/null 2>&1 && [ ! -e "$(ls -d "$WORK"/spool/* | head -1)/n1.pid" ]; }
  wait_until 30 summary_done
  sum=$(cat "$WORK"/spool/*/n1.summary 2>/dev/null)
  # The summary's rows: PID, RANK, COMMAND (which may read "sh (exited)"), ...
  r1=$(echo "$sum" | awk '$1 ~ /^[0-9]+$/ && $2=="1"' | grep -c DRIFTED)
  r0=$(echo "$sum" | awk '$1 ~ /^[0-9]+$/ && $2=="0"' | grep -c DRIFTED)
  [ "$r1" -ge 1 ] && [ "$r0" = 0 ] && pass "Prolog/Epilog: the finished job's summary says rank 1 DRIFTED, rank 0 not" \
    || fail "per-job summary: '$sum' $(cat "$WORK"/spool/*/n1.err 2>/dev/null) $(cat "$WORK/err")"
  [ "$(stat -c %a "$(ls -d "$WORK"/spool/* | head -1)")" = 700 ] && pass "the job's spool directory is root's alone (0700)" \
    || fail "spool mode: $(ls -ld "$WORK"/spool/*)"
else
  fail "cluster with gpubind's Prolog and Epilog did not start"
fi
"$HERE/cluster.sh" stop "$D7"
# 18. gpubind doctor as slurmd runs node checks (issue 36): deploy/slurm/gpubind-healthcheck.sh as
#     HealthCheckProgram drains a node whose doctor FAILs with the failing checks as the reason,
#     and resumes it once they pass; as a Prolog it fails the job's start (Slurm drains the node).
#     The node's facts come from the fixture trees (tests/data/doctor), chosen through a file.
D8="$WORK/cluster8"
data=$(cd "$HERE/../data/doctor" && pwd)
# The node starts clean (cluster.sh waits for it to be idle), then its facts turn bad.
echo "--root $data/clean --topology example:dgx-h100" >"$WORK/doctor-flags"
printf '#!/bin/sh\nexport SLURM_CONF=%s\nGPUBIND=%s GPUBIND_DOCTOR_FLAGS="$(cat %s)" exec %s 2>>%s\n' \
  "$D8/etc/slurm.conf" "$GPUBIND" "$WORK/doctor-flags" "$DEPLOY/gpubind-healthcheck.sh" "$WORK/healthcheck.err" >"$WORK/healthcheck"
chmod 755 "$WORK/healthcheck"
if CONF_EXTRA="HealthCheckProgram=$WORK/healthcheck
HealthCheckInterval=1" NODES=1 "$HERE/cluster.sh" start "$D8"; then
  trap '"$HERE/cluster.sh" stop "$D8"; rm -rf "$WORK"' EXIT
  export SLURM_CONF="$D8/etc/slurm.conf"
  echo "--root $data/every-problem --topology example:dgx-h100" >"$WORK/doctor-flags"
  reason() { sinfo -h -N -n n1 -o '%T|%E'; }
  drained() { case $(reason) in drain*"|gpubind doctor: FAIL pcie_links,cgroup_mems,slurm_task_plugin;"*) true ;; *) false ;; esac; }
  wait_until 60 drained && pass "HealthCheckProgram: slurmd's check drains the node: '$(reason | cut -c1-90)...'" \
    || fail "health check drain: '$(reason)' $(tail -3 "$WORK/healthcheck.err" 2>/dev/null)"
  echo "--root $data/clean --topology example:dgx-h100" >"$WORK/doctor-flags"
  resumed() { case $(reason) in idle*) true ;; *) false ;; esac; }
  wait_until 60 resumed && pass "HealthCheckProgram: the node it drained is resumed once no check fails ('$(reason)')" \
    || fail "health check resume: '$(reason)' $(tail -3 "$WORK/healthcheck.err" 2>/dev/null)"
else
  fail "cluster with gpubind's HealthCheckProgram did not start"
fi
"$HERE/cluster.sh" stop "$D8"
D9="$WORK/cluster9"
echo "--root $data/every-problem --topology example:dgx-h100" >"$WORK/doctor-flags"
sed -i "s|$D8/|$D9/|" "$WORK/healthcheck"
if CONF_EXTRA="Prolog=$WORK/healthcheck" NODES=1 "$HERE/cluster.sh" start "$D9"; then
  trap '"$HERE/cluster.sh" stop "$D9"; rm -rf "$WORK"' EXIT
  export SLURM_CONF="$D9/etc/slurm.conf"
  timeout 60 srun -Q -N1 -n1 true 2>"$WORK/err"
  rc=$?
  [ $rc != 0 ] && [ $rc != 124 ] && grep -q "prolog failed" "$WORK/err" && [ "$(sinfo -h -N -n n1 -o '%T|%E')" = "drained|Prolog error" ] \
    && grep -q "gpubind doctor: FAIL pcie_links,cgroup_mems,slurm_task_plugin" "$WORK/healthcheck.err" \
    && pass "Prolog: a node whose doctor FAILs refuses the job (srun exit $rc, 'Job prolog failed'), Slurm drains it, slurmd's log says why" \
    || fail "prolog: srun $rc $(cat "$WORK/err") node '$(sinfo -h -N -n n1 -o '%T|%E')'"
else
  fail "cluster with gpubind's doctor as Prolog did not start"
fi
"$HERE/cluster.sh" stop "$D9"
finish
