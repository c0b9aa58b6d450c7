#!/bin/sh
# gpubind doctor as a node-problem-detector custom plugin (gpubind-doctor.json beside this file).
# NPD's plugin protocol: exit 0 no problem, 1 a problem, anything else unknown; the first line of
# stdout is the condition's or event's message (cut at max_output_length).
#   gpubind-doctor.sh fail   a problem when a doctor check FAILs (the permanent GpuAffinityProblem condition)
#   gpubind-doctor.sh warn   a problem when a check WARNs or FAILs (a GpuAffinityWarning event)
# Settings: GPUBIND (the binary), GPUBIND_DOCTOR_FLAGS (more doctor flags, split on spaces).
set -u
GPUBIND=${GPUBIND:-/usr/bin/gpubind}
mode=${1:-fail}
case $mode in fail | warn) ;; *) echo "gpubind-doctor.sh: mode '$mode' is not fail or warn"; exit 2 ;; esac
[ -x "$GPUBIND" ] || { echo "gpubind-doctor.sh: $GPUBIND is not an executable"; exit 2; }
# shellcheck disable=SC2086 # the flags are words on purpose
out=$("$GPUBIND" doctor --no-gpu-runtime ${GPUBIND_DOCTOR_FLAGS:-} 2>&1)
rc=$?
failed=$(printf '%s\n' "$out" | awk '$2 == "FAIL" { printf "%s%s", sep, $1; sep = "," }')
warned=$(printf '%s\n' "$out" | awk '$2 == "WARN" { printf "%s%s", sep, $1; sep = "," }')
case $rc:$mode in
  0:*) echo "gpubind doctor: every check OK"; exit 0 ;;
  3:fail) echo "gpubind doctor: no check fails (WARN $warned)"; exit 0 ;;
  3:warn) echo "gpubind doctor: WARN $warned"; exit 1 ;;
  4:fail) echo "gpubind doctor: FAIL $failed"; exit 1 ;;
  4:warn) echo "gpubind doctor: FAIL $failed${warned:+; WARN $warned}"; exit 1 ;;
  *) echo "gpubind doctor exited $rc: $(printf '%s\n' "$out" | tail -1)"; exit 2 ;;
esac
