#!/usr/bin/env bash
# gpubind doctor on this machine, as a node health check runs it: whatever it finds, a documented
# exit status (0, 3 or 4), a row per check, JSON with the node and time, and a textfile that
# Prometheus' own parser (promtool check metrics) accepts; the GPU runtime cross-check through the
# fake NVML (agreeing, then disagreeing); run as an unprivileged user (the switch ports' config
# space unreadable: said, not an error).
# Usage: doctor_live.sh GPUBIND FAKE_NVML_DIR
set -u
. "$(dirname "$0")/lib.sh"
fake=${2:?usage: $0 GPUBIND FAKE_NVML_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
checks="numa_balancing isolcpus nohz_full housekeeping irq_affinity numa_layout numa_distances pcie_links pcie_acs iommu zone_reclaim thp_defrag swap cgroup_mems"
"$GPUBIND" doctor >"$WORK/out" 2>"$WORK/err"
rc=$?
case $rc in 0 | 3 | 4) pass "doctor on this machine: exit $rc ($(tail -1 "$WORK/out"))" ;; *) fail "doctor: exit $rc: $(cat "$WORK/out" "$WORK/err")" ;; esac
[ ! -s "$WORK/err" ] && pass "nothing on stderr" || fail "stderr: $(cat "$WORK/err")"
for check in $checks; do
  grep -qE "^$check +(OK|WARN|FAIL) " "$WORK/out" || fail "no row for $check: $(cat "$WORK/out")"
done
"$GPUBIND" doctor --json --textfile "$WORK/doctor.prom" >"$WORK/json"
rc2=$?
[ $rc2 = $rc ] && /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["node"] and j["time"].endswith("Z") and j["worst"] in ("OK", "WARN", "FAIL") and len(j["checks"]) >= 14, j
' "$WORK/json" && pass "--json: node, time, worst, every check" || fail "--json (exit $rc2): $(head -c 400 "$WORK/json")"
if command -v promtool >/dev/null; then
  promtool check metrics <"$WORK/doctor.prom" >"$WORK/lint" 2>&1 && [ "$(grep -c '^gpubind_doctor_check{' "$WORK/doctor.prom")" -ge 14 ] \
    && pass "the textfile passes promtool check metrics" || fail "textfile: $(cat "$WORK/lint" "$WORK/doctor.prom")"
else
  echo "SKIP (part): promtool not installed"
fi

# The GPU runtime libraries against the topology (this machine's /proc and /sys, the DGX H100's
# GPUs): an NVML that agrees is OK, one that sees another node's CPUs for a GPU warns.
runtime_check() {  # NVML_JSON [doctor flags...]: the gpu_runtime check's "SEVERITY why", or "absent"
  local nvml=$1
  shift
  LD_LIBRARY_PATH=$fake GPUBIND_FAKE_NVML=$nvml "$GPUBIND" doctor --topology example:dgx-h100 --json "$@" >"$WORK/rt.json" 2>"$WORK/rt.err"
  /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
c = [c for c in j["checks"] if c["check"] == "gpu_runtime"]
print(c[0]["severity"] + " " + c[0]["why"] if c else "absent " + " | ".join(j["notes"]))
' "$WORK/rt.json"
}
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
for g in j["gpus"]:
    g["pcie"] = {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16}
    g["nvlinks"] = j["gpus"][0]["nvlinks"]
json.dump(j, open(sys.argv[2], "w"))
' "$src/tests/data/nvml/dgx-h100-degraded.json" "$WORK/agrees.json"
out=$(runtime_check "$WORK/agrees.json")
case $out in "OK NVML 12.535.54 agree(s) with the topology on 8 GPU(s)"*) pass "gpu_runtime: an agreeing NVML is OK" ;; *) fail "agreeing NVML: $out $(cat "$WORK/rt.err")" ;; esac
out=$(runtime_check "$src/tests/data/nvml/dgx-h100-disagrees.json")
case $out in "WARN NVML 12.535.54 and the topology disagree"*"GPU 0000:2a:00.0: CPUs 0-55,112-167 near it in the topology, 56-111,168-223 from the library"*)
  pass "gpu_runtime: NVML seeing GPU 0000:2a:00.0 on the other node warns, naming both" ;;
*) fail "disagreeing NVML: $out" ;; esac
out=$(runtime_check "$src/tests/data/nvml/dgx-h100-disagrees.json" --no-gpu-runtime)
case $out in "absent gpu_runtime: not checked: --no-gpu-runtime"*) pass "--no-gpu-runtime: not loaded, said" ;; *) fail "--no-gpu-runtime: $out" ;; esac

# --slurm-conf and --kubelet-config as a user types them: a relative path is read from where the
# user stands (it was read as /PATH and, missing, reported "not checked": a mistyped path read as
# all OK); a named file that cannot be read is one error naming it, exit 1. slurm.conf's
# plugin stack (plugstack.conf beside it, its include) loading gpubind's plugin with default=
# binds every step under task/none: OK, not a FAIL that drains the node.
mkdir -p "$WORK/site/slurm/plugstack.conf.d"
printf 'ClusterName=c\nTaskPlugin=task/none\n' >"$WORK/site/slurm/slurm.conf"
printf 'include plugstack.conf.d/*.conf\n' >"$WORK/site/slurm/plugstack.conf"
printf '# the site default\noptional /usr/lib/x86_64-linux-gnu/slurm-wlm/gpubind_spank.so default=closest mem=preferred\n' \
  >"$WORK/site/slurm/plugstack.conf.d/gpubind.conf"
row=$(cd "$WORK/site" && "$GPUBIND" doctor --slurm-conf slurm/slurm.conf | grep '^slurm_task_plugin ')
case $row in *"OK "*"TaskPlugin=task/none in $WORK/site/slurm/slurm.conf; gpubind's SPANK plugin binds every step (default=closest, $WORK/site/slurm/plugstack.conf.d/gpubind.conf:2)"*)
  pass "--slurm-conf relative: read from here; the plugin's default=closest under task/none is OK" ;;
*) fail "relative --slurm-conf with the plugin: $row" ;; esac
sed -i 's/ default=closest//' "$WORK/site/slurm/plugstack.conf.d/gpubind.conf"
row=$(cd "$WORK/site" && "$GPUBIND" doctor --slurm-conf slurm/slurm.conf | grep '^slurm_task_plugin ')
case $row in *"WARN "*"binds only steps run with --gpubind"*) pass "the plugin without default=: WARN (only --gpubind steps bound)" ;; *) fail "plugin without default: $row" ;; esac
for flag in --slurm-conf --kubelet-config; do
  out=$(cd "$WORK/site" && "$GPUBIND" doctor "$flag" slurm/no-such.conf 2>&1)
  rc=$?
  case "$rc $out" in "1 gpubind: error: "*" $WORK/site/slurm/no-such.conf: No such file or directory")
    pass "$flag naming a missing file: exit 1, one line naming it" ;;
  *) fail "$flag missing: exit $rc: $out" ;; esac
done

# As a user without privileges, as a health check run by an unprivileged agent: the switch ports'
# extended config space and some of /proc are not readable; still one row per check, no error.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUBIND" doctor >"$WORK/user.out" 2>"$WORK/user.err"
  urc=$?
  rows=0
  for check in $checks; do grep -qE "^$check +(OK|WARN|FAIL) " "$WORK/user.out" && rows=$((rows + 1)); done
  case $urc in 0 | 3 | 4) [ "$rows" = "$(echo $checks | wc -w)" ] && [ ! -s "$WORK/user.err" ] \
    && pass "as nobody: exit $urc, every check's row, nothing on stderr" || fail "as nobody: $rows rows: $(cat "$WORK/user.out" "$WORK/user.err")" ;;
  *) fail "as nobody: exit $urc: $(cat "$WORK/user.out" "$WORK/user.err")" ;; esac
else
  echo "SKIP (part): not root or no setpriv: the unprivileged run"
fi
finish
