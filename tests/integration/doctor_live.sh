#!/usr/bin/env bash
# gpubind doctor on this machine, as a node health check runs it: whatever it finds, a documented
# exit status (0, 3 or 4), a row per check, JSON with the node and time, and a textfile that
# Prometheus' own parser (promtool check metrics) accepts.
set -u
. "$(dirname "$0")/lib.sh"
"$GPUBIND" doctor >"$WORK/out" 2>"$WORK/err"
rc=$?
case $rc in 0 | 3 | 4) pass "doctor on this machine: exit $rc ($(tail -1 "$WORK/out"))" ;; *) fail "doctor: exit $rc: $(cat "$WORK/out" "$WORK/err")" ;; esac
[ ! -s "$WORK/err" ] && pass "nothing on stderr" || fail "stderr: $(cat "$WORK/err")"
for check in numa_balancing isolcpus nohz_full numa_layout numa_distances pcie_links zone_reclaim thp_defrag swap; do
  grep -qE "^$check +(OK|WARN|FAIL) " "$WORK/out" || fail "no row for $check: $(cat "$WORK/out")"
done
"$GPUBIND" doctor --json --textfile "$WORK/doctor.prom" >"$WORK/json"
rc2=$?
[ $rc2 = $rc ] && /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["node"] and j["time"].endswith("Z") and j["worst"] in ("OK", "WARN", "FAIL") and len(j["checks"]) >= 9, j
' "$WORK/json" && pass "--json: node, time, worst, every check" || fail "--json (exit $rc2): $(head -c 400 "$WORK/json")"
if command -v promtool >/dev/null; then
  promtool check metrics <"$WORK/doctor.prom" >"$WORK/lint" 2>&1 && [ "$(grep -c '^gpubind_doctor_check{' "$WORK/doctor.prom")" -ge 9 ] \
    && pass "the textfile passes promtool check metrics" || fail "textfile: $(cat "$WORK/lint" "$WORK/doctor.prom")"
else
  echo "SKIP (part): promtool not installed"
fi
finish
