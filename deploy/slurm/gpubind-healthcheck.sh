#!/bin/sh
# `gpubind doctor` as Slurm runs node checks, in either of two places:
#   HealthCheckProgram (slurm.conf: HealthCheckProgram=/usr/share/gpubind/deploy/slurm/gpubind-healthcheck.sh,
#     HealthCheckInterval=300): a check that FAILs drains the node with the failing checks as the
#     reason ("gpubind doctor: FAIL pcie_links,cgroup_mems"); a node this script drained (its
#     reason starts "gpubind doctor:") is resumed once no check fails. Exit 0 either way: slurmd
#     only logs a health check's status, the drain is the action.
#   Prolog (slurm.conf: Prolog=..., or called from the site's prolog; Slurm sets
#     SLURM_SCRIPT_CONTEXT=prolog_slurmd): a check that FAILs exits 1, so Slurm drains the node
#     and requeues the job before it starts on a node that would make it jitter.
# Warnings are logged (stderr: slurmd's log) and drain nothing, unless GPUBIND_DOCTOR_DRAIN=warn.
# Settings from the environment: GPUBIND (the binary), GPUBIND_DOCTOR_FLAGS (more doctor flags,
# split on spaces: "--no-gpu-runtime"), GPUBIND_DOCTOR_TEXTFILE (also write node_exporter
# textfile metrics there), GPUBIND_DOCTOR_DRAIN (fail, the default, or warn), SCONTROL.
set -u
GPUBIND=${GPUBIND:-/usr/bin/gpubind}
SCONTROL=${SCONTROL:-scontrol}
drain_on=${GPUBIND_DOCTOR_DRAIN:-fail}
node=${SLURMD_NODENAME:-$(hostname -s)}
context=${SLURM_SCRIPT_CONTEXT:-health_check}
say() { echo "gpubind-healthcheck: $*" >&2; }
case $drain_on in fail | warn) ;; *) say "GPUBIND_DOCTOR_DRAIN=$drain_on: not fail or warn; fail is used"; drain_on=fail ;; esac
[ -x "$GPUBIND" ] || { say "$GPUBIND is not an executable: node $node not checked"; exit 0; }
set --
[ -n "${GPUBIND_DOCTOR_TEXTFILE:-}" ] && set -- --textfile "$GPUBIND_DOCTOR_TEXTFILE"
# shellcheck disable=SC2086 # the flags are words on purpose
out=$("$GPUBIND" doctor --node-name "$node" "$@" ${GPUBIND_DOCTOR_FLAGS:-} 2>&1)
rc=$?
# The table's rows: CHECK RESULT WHY...
failed=$(printf '%s\n' "$out" | awk '$2 == "FAIL" { printf "%s%s", sep, $1; sep = "," }')
warned=$(printf '%s\n' "$out" | awk '$2 == "WARN" { printf "%s%s", sep, $1; sep = "," }')
case $rc in
  0) bad= ;;
  3) bad=${warned:+WARN $warned}; [ -n "$bad" ] && say "node $node: $bad (no drain: GPUBIND_DOCTOR_DRAIN=$drain_on)"; [ "$drain_on" = warn ] || bad= ;;
  4) bad="FAIL $failed${warned:+; WARN $warned}" ;;
  *) say "gpubind doctor exited $rc on node $node: $(printf '%s\n' "$out" | tail -1)"; exit 0 ;;
esac
if [ "$context" = prolog_slurmd ]; then
  [ -z "$bad" ] && exit 0
  say "node $node: gpubind doctor: $bad: Slurm drains the node (a batch job goes back to the queue)"
  printf '%s\n' "$out" | sed -n '/^how to fix:/,/^$/p' >&2
  exit 1
fi
reason=$("$SCONTROL" show node "$node" 2>/dev/null | sed -n 's/^ *Reason=//p')
if [ -n "$bad" ]; then
  say "node $node: gpubind doctor: $bad: draining"
  "$SCONTROL" update NodeName="$node" State=DRAIN Reason="gpubind doctor: $bad" || say "scontrol could not drain $node"
else
  case $reason in "gpubind doctor:"*)
    say "node $node: gpubind doctor finds no failure now: resuming the node it drained"
    "$SCONTROL" update NodeName="$node" State=RESUME || say "scontrol could not resume $node" ;;
  esac
fi
exit 0
