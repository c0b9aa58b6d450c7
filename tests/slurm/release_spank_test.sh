#!/usr/bin/env bash
# The SPANK plugin built against a newer Slurm release (src/CMakeLists.txt builds one per root
# scripts/slurm-release.sh made) on a throw-away cluster of that release (release_cluster.sh): one
# node of this machine's real shape, so the binding is real. Each task of `srun --gpubind=verbose`
# is bound to the CPUs `gpubind plan` gives its local rank and the plugin says its line; sbatch
# --gpubind reaches the step inside the batch script; a site default in plugstack.conf binds a
# plain srun; a bad --gpubind is refused; and the plugin built for Debian 12's 22.05 is refused by
# this release's srun in Slurm's own words (a plugin must be built for the Slurm it runs in). Then, with two stand-in GPUs under task/affinity: the release's GPU
# rules per task (5), shards (6) and core specialization (7); and doctor on both plugin files (8).
#
#   release_spank_test.sh GPUBIND RELEASE PLUGIN_FOR_RELEASE PLUGIN_FOR_22.05
set -u
GPUBIND=${1:?gpubind binary}
RELEASE=${2:?release}
PLUGIN=${3:-}
OLD_PLUGIN=${4:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/release_lib.sh"
need_release "chroot, mounts, slurmd as root"
[ -f "$PLUGIN" ] || skip "the plugin for Slurm $RELEASE is not built (make its root, then configure the build again)"

D=$(mktemp -d /tmp/gpubind-slurm-spank.XXXXXX)
trap 'rm -rf "$D"' EXIT
T=/mnt/gpubind-test
# This machine as one node: its packages, cores and threads (no GPU: the plugin plans CPUs only).
shape=$("$GPUBIND" topo --quiet --json | /usr/bin/python3 "$HERE/topology_json.py" node-shape --one-package-if-unknown)
mkdir -p "$D/nodes"
echo "# slurm.conf: NodeName=n1 $shape" > "$D/nodes/n1.gres"
cp "$PLUGIN" "$D/gpubind_spank.so"
[ -f "$OLD_PLUGIN" ] && cp "$OLD_PLUGIN" "$D/gpubind_spank_2205.so"
cat > "$D/batch.sh" <<'BATCH'
#!/bin/sh
echo "batch $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"
srun -Q sh -c 'echo "$SLURM_LOCALID $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"'
BATCH
chmod +x "$D/batch.sh"
cat > "$D/steps.sh" <<STEPS
T=$T
export SLURM_CONF=\$T/etc/slurm.conf
probe='echo "\$SLURM_LOCALID \$(grep Cpus_allowed_list /proc/self/status | cut -f2) \${GPUBIND_CPUS:-unset}"'
srun -Q -N1 -n2 --gpubind=verbose sh -c "\$probe" > \$T/verbose.out 2> \$T/verbose.err; echo \$? > \$T/verbose.rc
srun -Q -N1 -n1 --gpubind=bogus true > \$T/bogus.out 2>&1; echo \$? > \$T/bogus.rc
sbatch -Q --wait -N1 -n2 --gpubind -o \$T/batch.out \$T/batch.sh > \$T/sbatch.out 2>&1; echo \$? > \$T/batch.rc
echo "required \$T/gpubind_spank.so default=closest" > \$T/plugstack.conf
srun -Q -N1 -n2 sh -c "\$probe" > \$T/default.out 2> \$T/default.err; echo \$? > \$T/default.rc
if [ -f \$T/gpubind_spank_2205.so ]; then
  echo "required \$T/gpubind_spank_2205.so" > \$T/plugstack.conf
  srun -Q -N1 -n1 true > \$T/old.out 2>&1; echo \$? > \$T/old.rc
fi
STEPS

plan_cpus() { "$GPUBIND" plan --quiet -n 2 --format env --rank "$1" | sed -n 's/^export GPUBIND_CPUS=//p'; }

# Each case under TaskPlugin tp: Slurm's own binding off (task/none: the plugin binds alone) and on
# (task/affinity, as production sites run it: the plugin narrows within the step's CPUs).
run_cases() {  # PORT
  rm -f "$D"/*.out "$D"/*.err "$D"/*.rc "$D/nodes.txt"  # batch.sh stays
    echo "required $T/gpubind_spank.so" > "$D/plugstack.conf"
    TASK_PLUGIN=$tp "$HERE/release_cluster.sh" "$ROOTFS" "$D" "$1" > "$D/run.log" 2>&1 || { fail "the $RELEASE cluster ($tp) did not run: $(tail -5 "$D/run.log" | tr '\n' ' ')"; return; }
  state=$(sed -n 's/.* State=\([^ ]*\).*/\1/p' "$D/nodes.txt")
  case $state in IDLE*) ;; *) fail "node n1 of Slurm $RELEASE ($tp) ($tp) is $state: $(sed -n 's/^ *Reason=//p' "$D/nodes.txt")"; return ;; esac

  # 1. --gpubind=verbose: each task on its plan's CPUs, GPUBIND_CPUS said, the plugin's line.
  for r in 0 1; do
    line=$(awk -v r=$r '$1 == r' "$D/verbose.out")
    want=$(plan_cpus $r)
    if [ "$(cat "$D/verbose.rc")" = 0 ] && [ -n "$want" ] && [ "$line" = "$r $want $want" ]; then
      pass "Slurm $RELEASE ($tp), srun --gpubind=verbose: local rank $r bound to CPUs $want, as gpubind plan says"
    else
      fail "Slurm $RELEASE ($tp), srun --gpubind=verbose: local rank $r: '$line', plan '$want' (rc $(cat "$D/verbose.rc"); $(head -3 "$D/verbose.err" | tr '\n' ' '))"
    fi
  done
  grep -q "gpubind: .* rank 0 (local 0): .*CPUs $(plan_cpus 0)," "$D/verbose.err" && pass "Slurm $RELEASE ($tp): the plugin's verbose line: $(grep -m1 'rank 0 (local 0)' "$D/verbose.err")" ||
    fail "Slurm $RELEASE ($tp): no verbose line from the plugin: $(head -3 "$D/verbose.err" | tr '\n' ' ')"

  # 2. A bad value is refused by srun.
  [ "$(cat "$D/bogus.rc")" != 0 ] && grep -q gpubind "$D/bogus.out" && pass "Slurm $RELEASE ($tp): --gpubind=bogus refused: $(grep -m1 gpubind "$D/bogus.out")" ||
    fail "Slurm $RELEASE ($tp): --gpubind=bogus accepted (rc $(cat "$D/bogus.rc")): $(cat "$D/bogus.out")"

  # 2b. sbatch --gpubind: the job's choice reaches the steps inside it; the batch script itself is
  #     no task and keeps the job's CPUs.
  tasks=$(awk '$1 ~ /^[0-9]+$/ && $3 != "unset" && $2 == $3' "$D/batch.out" 2>/dev/null | wc -l)
  [ "$(cat "$D/batch.rc")" = 0 ] && [ "$tasks" = 2 ] && pass "Slurm $RELEASE ($tp): sbatch --gpubind carries to the srun step inside (2 tasks bound)" ||
    fail "Slurm $RELEASE ($tp): sbatch --gpubind (rc $(cat "$D/batch.rc")): $(cat "$D/sbatch.out" "$D/batch.out" 2>/dev/null | tr '\n' ' ')"
  [ "$(awk '$1 == "batch" {print $2, $3}' "$D/batch.out" 2>/dev/null)" = "$(cat /sys/devices/system/cpu/online) unset" ] &&
    pass "Slurm $RELEASE ($tp): the batch script keeps the job's CPUs and no GPUBIND_*" ||
    fail "Slurm $RELEASE ($tp): the batch script: $(grep batch "$D/batch.out" 2>/dev/null)"

  # 3. The site default binds a plain srun.
  bound=$(awk '$3 != "unset" && $2 == $3' "$D/default.out" | wc -l)
  [ "$bound" = 2 ] && pass "Slurm $RELEASE ($tp): plugstack.conf default=closest binds a plain srun (both tasks)" ||
    fail "Slurm $RELEASE ($tp): default=closest: $(cat "$D/default.out" "$D/default.err" | tr '\n' ' ')"

  # 4. The plugin built for 22.05: this release refuses it, in its own words, and runs nothing.
  if [ -f "$D/old.rc" ]; then
    if [ "$(cat "$D/old.rc")" != 0 ] && grep -q "Incompatible Slurm plugin .*gpubind_spank_2205.so version (22\.05" "$D/old.out"; then
      pass "Slurm $RELEASE ($tp) refuses the plugin built for 22.05: $(grep -m1 Incompatible "$D/old.out")"
    else
      fail "Slurm $RELEASE ($tp) and the plugin built for 22.05 (rc $(cat "$D/old.rc")): $(head -3 "$D/old.out" | tr '\n' ' ')"
    fi
  fi
}

PORT=$((23000 + (RANDOM % 400) * 20))
for tp in task/none task/affinity; do run_cases $((PORT += 20)); done

# 5-7. GPUs as Slurm of this release gives them, under task/affinity on a node shaped like this
#    machine (2 sockets x 1 core), two stand-in GPUs (GPU 0 near CPU 0, GPU 1 near CPU 1, in
#    gres.conf and in the plugin's topology), default=closest. gpu_cluster N NODE_EXTRA GRES_LINES
#    STEPS runs one with the node line's extra words, gres.conf's lines and the steps (each srun's
#    output to its own file); NODES (default n1) names its nodes, each of that shape;
#    SELECT_TYPE_PARAMETERS and GRES_TYPES pass through.
gpu_cluster() {
  G=$D/gpus$1
  mkdir -p "$G/nodes" "$G/dev/n1"
  "$GPUBIND" topo --quiet --json | /usr/bin/python3 "$HERE/topology_json.py" two-gpus > "$G/two-gpus.json"
  for i in 0 1; do mknod "$G/dev/n1/nvidia$i" c 195 $i 2>/dev/null || : > "$G/dev/n1/nvidia$i"; done
  for node in ${NODES:-n1}; do  # each node of the same shape, gres.conf's lines named for it
    printf '# slurm.conf: NodeName=n1 Boards=1 SocketsPerBoard=2 CoresPerSocket=1 ThreadsPerCore=1 %s\n%s\n' "$2" "$3" |
      sed "s/NodeName=n1 /NodeName=$node /" > "$G/nodes/$node.gres"
  done
  cp "$PLUGIN" "$G/gpubind_spank.so"
  echo "required $T/gpubind_spank.so default=closest topology=$T/two-gpus.json" > "$G/plugstack.conf"
  { echo "export SLURM_CONF=$T/etc/slurm.conf"
    echo "probe='echo \"\$SLURM_LOCALID \$(grep Cpus_allowed_list /proc/self/status | cut -f2) \${GPUBIND_CPUS:-unset} \${GPUBIND_GPU:-unset} \${CUDA_VISIBLE_DEVICES:-unset}\"'"
    printf '%s\n' "$4" | sed "s#> \\([a-z_0-9]*\\.out\\)#> $T/\\1#"; } > "$G/steps.sh"
  TASK_PLUGIN=task/affinity "$HERE/release_cluster.sh" "$ROOTFS" "$G" $((PORT + 100 + 20 * $1)) > "$G/run.log" 2>&1 ||
    { fail "the $RELEASE cluster with GPUs ($1) did not run: $(tail -5 "$G/run.log" | tr '\n' ' ')"; return 1; }
}
gpu_case() {  # gpu_case WHAT FILE "TASK0" "TASK1" [guessed]: each "CPU GPU"
  local got want
  got=$(awk '$1 ~ /^[01]$/ {print $1, $2, $3, $4}' "$G/$2" | sort)
  want=$(printf '0 %s %s %s\n1 %s %s %s' "${3% *}" "${3% *}" "${3#* }" "${4% *}" "${4% *}" "${4#* }")
  [ "$got" = "$want" ] && pass "Slurm $RELEASE (task/affinity): $1" || fail "Slurm $RELEASE (task/affinity): $1: got '$(tr '\n' ' ' < "$G/$2")'"
  # A rule that names every task's GPU is read, nothing guessed (the plugin says a guess).
  [ "${5:-}" = guessed ] || ! grep -q "are assumed" "$G/$2" ||
    fail "Slurm $RELEASE: $1: the rule names every task's GPU, yet the plugin guessed: $(grep -m1 'are assumed' "$G/$2")"
}
if [ "$(cat /sys/devices/system/cpu/online)" != "0-1" ]; then
  echo "SKIP 5-7: the GPU cases need a machine of exactly CPUs 0-1 (this one: $(cat /sys/devices/system/cpu/online))"
else
  two_gpus=$'NodeName=n1 Name=gpu File=/dev/nvidia0 Cores=0\nNodeName=n1 Name=gpu File=/dev/nvidia1 Cores=1'
  # 5. Per task: since 24.11 --gpus-per-task reaches the task as SLURM_TRES_BIND=gres/gpu:per_task:1
  #    (no SLURM_GPUS_PER_TASK); --tres-bind=gres/gpu:map:/mask: beside --gpu-bind's map_gpu:; with
  #    --gres-flags=allow-task-sharing (each task may open the step's every GPU) and with a NIC rule
  #    beside the GPU's (gres/nic:closest, after a '+'), each task still has its own GPU. On two
  #    nodes, a heterogeneous step: --gpus-per-task=1 on n1, --gpu-bind=map_gpu:1,0 on n2.
  if NODES="n1 n2" gpu_cluster 5 "Gres=gpu:2" "$two_gpus" '
srun -Q -N1 -n2 --gpus-per-task=1 sh -c "$probe" > per_task.out 2>&1
srun -Q -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 sh -c "$probe" > map_gpu.out 2>&1
srun -Q -N1 -n2 --gres=gpu:2 --tres-bind=gres/gpu:map:1,0 sh -c "$probe" > map.out 2>&1
srun -Q -N1 -n2 --gres=gpu:2 --tres-bind=gres/gpu:verbose,mask:0x2,0x1 sh -c "$probe" > mask.out 2>&1
srun -Q -N1 -n2 --gpus-per-task=1 --gres-flags=allow-task-sharing sh -c "$probe" > sharing.out 2>&1
srun -Q -N1 -n2 --gpus-per-task=1 --tres-bind=gres/gpu:per_task:1+gres/nic:closest sh -c "$probe" > nic.out 2>&1
srun -Q -w n1 -N1 -n2 --gpus-per-task=1 : -w n2 -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 sh -c "echo \$SLURMD_NODENAME \$($probe)" > het.out 2>&1'; then
    gpu_case "--gpus-per-task=1: each task on its own GPU's CPU" per_task.out "0 0000:e1:00.0" "1 0000:e2:00.0"
    gpu_case "--gpu-bind=map_gpu:1,0: task 0 on GPU 1's CPU, task 1 on GPU 0's" map_gpu.out "1 0000:e2:00.0" "0 0000:e1:00.0"
    gpu_case "--tres-bind=gres/gpu:map:1,0: the same" map.out "1 0000:e2:00.0" "0 0000:e1:00.0"
    gpu_case "--tres-bind=gres/gpu:verbose,mask:0x2,0x1: the same" mask.out "1 0000:e2:00.0" "0 0000:e1:00.0"
    gpu_case "--gpus-per-task=1 --gres-flags=allow-task-sharing: each task on its own GPU's CPU" sharing.out "0 0000:e1:00.0" "1 0000:e2:00.0"
    gpu_case "--tres-bind=gres/gpu:per_task:1+gres/nic:closest: the same" nic.out "0 0000:e1:00.0" "1 0000:e2:00.0"
    got=$(awk '$1 ~ /^n[12]$/ {print $1, $2, $3, $5}' "$G/het.out" | sort | tr '\n' ';')
    [ "$got" = "n1 0 0 0000:e1:00.0;n1 1 1 0000:e2:00.0;n2 0 1 0000:e2:00.0;n2 1 0 0000:e1:00.0;" ] &&
      pass "Slurm $RELEASE: heterogeneous step: each component's tasks on their own GPU's CPU ($got)" ||
      fail "Slurm $RELEASE: heterogeneous step: '$got': $(tr '\n' ' ' < "$G/het.out")"
  fi
  # 6. Shards of the GPUs (gres/shard, two per GPU): Slurm picks each task's shards by the tasks'
  #    CPUs, so the plugin reads its own task's GPU (CUDA_VISIBLE_DEVICES) and says it guessed the
  #    others'. Each task must be on the CPU of the GPU Slurm gave it, one CPU each; with
  #    --gres-flags=one-task-per-sharing (SelectTypeParameters MULTIPLE_SHARING_GRES_PJ) the two
  #    tasks' GPUs differ.
  shard_case() {  # shard_case WHAT FILE [distinct]
    local bad
    bad=$(awk '$1 ~ /^[01]$/ { n++; gpu = ($5 == "0" ? "0000:e1:00.0" : $5 == "1" ? "0000:e2:00.0" : "?")
                               if ($2 != $3 || $4 != gpu || $2 != $5) print; cpus[$2] = 1; gpus[$4] = 1 }
               END { if (n != 2 || length(cpus) != 2) print "not two tasks on two CPUs"
                     if (want == "distinct" && length(gpus) != 2) print "both tasks on one GPU" }' want="${3:-}" "$G/$2")
    [ -z "$bad" ] && pass "Slurm $RELEASE (task/affinity): $1: $(awk '$1 ~ /^[01]$/ {printf "task %s CPU %s GPU %s; ", $1, $2, $4}' "$G/$2")" ||
      fail "Slurm $RELEASE (task/affinity): $1: $bad; got '$(tr '\n' ' ' < "$G/$2")'"
  }
  if SELECT_TYPE_PARAMETERS=CR_Core,MULTIPLE_SHARING_GRES_PJ GRES_TYPES=gpu,shard gpu_cluster 6 "Gres=gpu:2,shard:4" \
    "$two_gpus"$'\nNodeName=n1 Name=shard Count=2 File=/dev/nvidia0\nNodeName=n1 Name=shard Count=2 File=/dev/nvidia1' '
srun -Q -N1 -n2 --tres-per-task=gres/shard:1 sh -c "$probe" > shards.out 2>&1
srun -Q -N1 -n2 --tres-per-task=gres/shard:1 --gres-flags=one-task-per-sharing sh -c "$probe" > one_per_sharing.out 2>&1'; then
    shard_case "--tres-per-task=gres/shard:1: each task on its shards' GPU's CPU" shards.out
    shard_case "--tres-per-task=gres/shard:1 --gres-flags=one-task-per-sharing: the same, on two GPUs" one_per_sharing.out distinct
  fi
  # 7. Core specialization (CoreSpecCount=1: slurmctld keeps the last core, CPU 1, from jobs): the
  #    plugin plans over the step's cores and says what it held back, as on 22.05.
  if gpu_cluster 7 "CoreSpecCount=1 Gres=gpu:2" "$two_gpus" '
srun -Q -N1 -n1 --gres=gpu:2 --gpubind=verbose sh -c "$probe" > spec.out 2>&1'; then
    line=$(awk '$1 == 0 {print $1, $2, $3, $4}' "$G/spec.out")
    [ "$line" = "0 0 0 0000:e1:00.0,0000:e2:00.0" ] && grep -q "CPUs 1 held back: not among the step's cores" "$G/spec.out" &&
      pass "Slurm $RELEASE: CoreSpecCount=1: the rank gets CPU 0 only, and the specialized CPU 1 is said to be held back" ||
      fail "Slurm $RELEASE: CoreSpecCount=1: $(tr '\n' ' ' < "$G/spec.out")"
  fi
fi

# 8. doctor's slurm_spank on the real plugin files, before any srun: the one built for this release
#    is OK for it, the one built for 22.05 FAILs for it (Slurm's refusal of case 4), read from the
#    files in PluginDir without loading them.
for p in "$PLUGIN:OK" "$OLD_PLUGIN:FAIL"; do
  file=${p%:*} want=${p##*:}
  [ -f "$file" ] || continue
  R=$D/doctor-root
  rm -rf "$R" && mkdir -p "$R/etc/slurm" "$R/opt/slurm/lib"
  printf 'TaskPlugin=task/affinity\nPluginDir=/opt/slurm/lib\n' > "$R/etc/slurm/slurm.conf"
  echo "required gpubind_spank.so default=closest" > "$R/etc/slurm/plugstack.conf"
  cp "$file" "$R/opt/slurm/lib/gpubind_spank.so"
  said=$("$GPUBIND" doctor --quiet --root "$R" --topology example:dgx-h100 --slurm-version "$RELEASE" 2>/dev/null | awk '$1 == "slurm_spank"')
  case $said in
    *" $want "*) pass "doctor for Slurm $RELEASE on $(basename "$(dirname "$file")")/$(basename "$file"): ${said#slurm_spank}" ;;
    *) fail "doctor for Slurm $RELEASE on $file: want $want, said '$said'" ;;
  esac
done

echo "$failures failure(s)"
[ "$failures" = 0 ]
