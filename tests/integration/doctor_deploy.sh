#!/usr/bin/env bash
# deploy/'s three ways to run `gpubind doctor` as a node health check, on the fixture trees
# (tests/data/doctor: a node with every problem, a clean one, one with a warning only):
#   deploy/slurm/gpubind-healthcheck.sh  as HealthCheckProgram (drains through scontrol with the
#                                        failing checks as the reason, resumes a node it drained)
#                                        and as a Prolog (exit 1: Slurm drains and requeues).
#                                        Here scontrol is a recording stand-in; tests/slurm/spank_test.sh
#                                        section 18 runs it under a real slurmd.
#   deploy/nhc/gpubind.nhc               an NHC check: NHC is not packaged in Debian, so its two
#                                        calls a check makes (die, log) are defined as NHC defines them
#   deploy/kubernetes/node-problem-detector  the custom plugin's protocol (exit 0/1/2, message on
#                                        stdout within max_output_length) and its config's shape
set -u
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
deploy=$src/deploy
data=$src/tests/data/doctor
every="--root $data/every-problem --topology example:dgx-h100"
clean="--root $data/clean --topology example:dgx-h100"
warn_only="--root $data/unknown-locality --topology example:cloud-vm-unknown-locality"

# A recording scontrol: `show node` prints the Reason in $WORK/reason; `update` is logged.
cat >"$WORK/scontrol" <<'SH'
#!/bin/sh
case $1 in
  show) echo "NodeName=$3 Arch=x86_64 CoresPerSocket=56"; [ -s "$STUB/reason" ] && echo "   Reason=$(cat "$STUB/reason") [root@2026-12-05T10:00:00]"; exit 0 ;;
  update) shift; printf '%s\n' "$*" >>"$STUB/calls"; exit 0 ;;
esac
exit 1
SH
chmod 755 "$WORK/scontrol"
hc() {  # FLAGS [ENV...]: the health check on node gpu02; sets $calls and $err
  local flags=$1
  shift
  : >"$WORK/calls"
  env STUB="$WORK" SCONTROL="$WORK/scontrol" GPUBIND="$GPUBIND" GPUBIND_DOCTOR_FLAGS="$flags" SLURMD_NODENAME=gpu02 "$@" \
    "$deploy/slurm/gpubind-healthcheck.sh" 2>"$WORK/err"
  hrc=$?
  calls=$(cat "$WORK/calls")
  err=$(cat "$WORK/err")
}
: >"$WORK/reason"
hc "$every"
[ $hrc = 0 ] && [ "$calls" = 'NodeName=gpu02 State=DRAIN Reason=gpubind doctor: FAIL pcie_links,cgroup_mems,slurm_task_plugin; WARN numa_balancing,isolcpus,nohz_full,housekeeping,irq_affinity,pcie_acs,iommu,zone_reclaim,thp_defrag,swap,kubelet' ] \
  && pass "HealthCheckProgram: a failing node is drained with the failing checks as the reason, exit 0" || fail "drain: rc $hrc calls '$calls' err '$err'"
echo "gpubind doctor: FAIL pcie_links" >"$WORK/reason"
hc "$clean"
[ $hrc = 0 ] && [ "$calls" = "NodeName=gpu02 State=RESUME" ] && pass "HealthCheckProgram: a node it drained is resumed once no check fails" \
  || fail "resume: rc $hrc calls '$calls' err '$err'"
echo "disk replaced, testing" >"$WORK/reason"
hc "$clean"
[ $hrc = 0 ] && [ -z "$calls" ] && pass "HealthCheckProgram: a node an admin drained stays drained" || fail "admin's drain: calls '$calls'"
: >"$WORK/reason"
hc "$warn_only"
[ -z "$calls" ] && echo "$err" | grep -q "WARN numa_layout (no drain" && pass "HealthCheckProgram: a warning is logged, nothing drained" \
  || fail "warning: calls '$calls' err '$err'"
hc "$warn_only" GPUBIND_DOCTOR_DRAIN=warn
[ "$calls" = "NodeName=gpu02 State=DRAIN Reason=gpubind doctor: WARN numa_layout" ] && pass "GPUBIND_DOCTOR_DRAIN=warn drains on a warning" \
  || fail "drain on warn: calls '$calls' err '$err'"
hc "$every" SLURM_SCRIPT_CONTEXT=prolog_slurmd
[ $hrc = 1 ] && [ -z "$calls" ] && echo "$err" | grep -q "FAIL pcie_links,cgroup_mems,slurm_task_plugin" && echo "$err" | grep -q "^  pcie_links: reseat" \
  && pass "Prolog: a failing node exits 1 (Slurm drains it and requeues the job), the fixes on stderr" || fail "prolog: rc $hrc calls '$calls' err '$err'"
hc "$warn_only" SLURM_SCRIPT_CONTEXT=prolog_slurmd
[ $hrc = 0 ] && pass "Prolog: warnings only: the job starts" || fail "prolog warn: rc $hrc err '$err'"
hc "--no-such-flag"
[ $hrc = 0 ] && [ -z "$calls" ] && echo "$err" | grep -q "gpubind doctor exited 2" && pass "a doctor that cannot run: logged, nothing drained" \
  || fail "usage error: rc $hrc calls '$calls' err '$err'"
out=$(GPUBIND_DOCTOR_TEXTFILE="$WORK/doctor.prom" hc "$clean"; cat "$WORK/doctor.prom" 2>/dev/null | grep -c '^gpubind_doctor_check{')
[ "$out" -ge 15 ] && pass "GPUBIND_DOCTOR_TEXTFILE: the metrics are written too" || fail "textfile: '$out'"

# NHC: a check function that calls die on failure (NHC then marks the node) and log otherwise.
nhc() {  # FLAGS [-w]: what the check called, and its status
  NODE_NAME=gpu02 GPUBIND="$GPUBIND" GPUBIND_DOCTOR_FLAGS="$1" bash -c '
    die() { echo "die $1: $2"; return "$1"; }
    log() { echo "log: $*"; }
    . "$0"
    check_gpubind_doctor "$1"; echo "status $?"' "$deploy/nhc/gpubind.nhc" "${2:-}"
}
out=$(nhc "$every")
[ "$out" = "die 1: check_gpubind_doctor: gpubind doctor: FAIL pcie_links,cgroup_mems,slurm_task_plugin
status 1" ] && pass "NHC: a failing check dies with the failing checks" || fail "nhc fail: '$out'"
out=$(nhc "$warn_only")
case $out in "log: check_gpubind_doctor: gpubind doctor: WARN numa_layout "*"status 0") pass "NHC: a warning is logged, the node passes" ;; *) fail "nhc warn: '$out'" ;; esac
out=$(nhc "$warn_only" -w)
[ "$out" = "die 1: check_gpubind_doctor: gpubind doctor: WARN numa_layout
status 1" ] && pass "NHC: check_gpubind_doctor -w fails on a warning" || fail "nhc -w: '$out'"
out=$(nhc "$clean")
[ "$out" = "status 0" ] && pass "NHC: a clean node passes silently" || fail "nhc clean: '$out'"

# node-problem-detector: the plugin protocol and the monitor config.
npd() { NODE_NAME=gpu02 GPUBIND="$GPUBIND" GPUBIND_DOCTOR_FLAGS="$1" "$deploy/kubernetes/node-problem-detector/gpubind-doctor.sh" "$2"; }
check_npd() {  # FLAGS MODE WANT_RC WANT_MESSAGE_PREFIX
  local out rc
  out=$(npd "$1" "$2")
  rc=$?
  [ $rc = "$3" ] && case $out in "$4"*) true ;; *) false ;; esac && [ "$(echo "$out" | wc -l)" = 1 ] && [ ${#out} -le 240 ] \
    && pass "node-problem-detector $2 rule: exit $rc, '$out'" || fail "npd $2 ($1): rc $rc '$out'"
}
check_npd "$every" fail 1 "gpubind doctor: FAIL pcie_links,cgroup_mems,slurm_task_plugin"
check_npd "$warn_only" fail 0 "gpubind doctor: no check fails (WARN numa_layout)"
check_npd "$warn_only" warn 1 "gpubind doctor: WARN numa_layout"
check_npd "$clean" warn 0 "gpubind doctor: every check OK"
check_npd "--no-such-flag" fail 2 "gpubind doctor exited 2"
/usr/bin/python3 - "$deploy/kubernetes/node-problem-detector/gpubind-doctor.json" <<'PY' && pass "the monitor config: one condition, a permanent and a temporary rule running the shipped script" || fail "gpubind-doctor.json"
import json, os, sys
c = json.load(open(sys.argv[1]))
assert c["plugin"] == "custom" and c["source"]
cfg = c["pluginConfig"]
assert int(cfg["max_output_length"]) >= 200 and cfg["timeout"] and cfg["invoke_interval"]
conds = {d["type"] for d in c["conditions"]}
kinds = sorted(r["type"] for r in c["rules"])
assert kinds == ["permanent", "temporary"], kinds
for r in c["rules"]:
    assert r["path"] == "/usr/share/gpubind/deploy/kubernetes/node-problem-detector/gpubind-doctor.sh", r
    assert r["args"] in (["fail"], ["warn"]) and r["reason"]
    if r["type"] == "permanent":
        assert r["condition"] in conds and r["args"] == ["fail"]
assert os.access(os.path.join(os.path.dirname(sys.argv[1]), "gpubind-doctor.sh"), os.X_OK)
PY
finish
