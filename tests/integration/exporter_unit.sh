#!/usr/bin/env bash
# The shipped exporter unit (deploy/systemd/gpubind-watch.service) runs with least privilege and
# still sees every user's ranks (issue 29 item 6):
#   - systemd's own reading: `systemd-analyze security` rates its exposure at most 3.0 ("OK";
#     9.0 "UNSAFE" as the root service it was);
#   - it runs as a dynamic user, not root, with exactly the capabilities it names;
#   - watch started as such a user with those capabilities (setpriv, as systemd would) reads a
#     root process's rank variables, its fd links and perf counters on it; without any one of
#     the three capabilities one of those is refused, so none of them is idle.
set -u
. "$(dirname "$0")/lib.sh"
unit=$(cd "$(dirname "$0")/../.." && pwd)/deploy/systemd/gpubind-watch.service
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (scripts/install-deps.sh installs systemd)"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
[ "$(id -u)" = 0 ] || skip "running watch as another user with capabilities needs root"

score=$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' && pass "systemd-analyze security: exposure $score" \
  || fail "systemd-analyze security: exposure '$score', above 3.0: $(systemd-analyze security --offline=true "$unit" 2>&1 | grep '✗' | head -5)"
grep -qx "DynamicUser=yes" "$unit" && ! grep -qE "^User=(root|0)$" "$unit" && pass "the unit runs as a dynamic user" || fail "the unit does not run as a dynamic user"
caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit")
bounding=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
[ -n "$caps" ] && [ "$caps" = "$bounding" ] && pass "capabilities: $caps (bounding set the same)" || fail "AmbientCapabilities '$caps' vs CapabilityBoundingSet '$bounding'"

# setpriv's spelling: CAP_SYS_PTRACE -> +sys_ptrace
as_setpriv() { local out="" c; for c in "$@"; do c=${c#CAP_}; out="$out${out:+,}+$(echo "$c" | tr 'A-Z' 'a-z')"; done; echo "$out"; }
# watch as a user in systemd's DynamicUser range, with the capabilities given.
watch_as() {
  local c; c=$(as_setpriv "$@")
  setpriv --reuid=61999 --regid=61999 --clear-groups ${c:+--inh-caps=$c --ambient-caps=$c} \
    "$GPUBIND" watch --pid "$target" --interval 0.3 --duration 0.6 --json 2>&1 | tail -1
}
RANK=5 LOCAL_RANK=1 SLURM_JOB_ID=4242 sleep 600 &
target=$!
trap 'kill $target 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
# shellcheck disable=SC2086
summary=$(watch_as $caps)
echo "$summary" | grep -q '"rank":"5","local_rank":"1","job":"4242"' && pass "with the unit's capabilities, watch reads a root process's rank, local rank and job" \
  || fail "with $caps: $summary"
# shellcheck disable=SC2086
out=$(watch_as $(for c in $caps; do [ "$c" = CAP_DAC_READ_SEARCH ] || echo "$c"; done))
echo "$out" | grep -q '"rank":null' && pass "without CAP_DAC_READ_SEARCH the rank is unknown: the capability is needed" || fail "without CAP_DAC_READ_SEARCH: $out"
# CAP_SYS_PTRACE: --all-gpu-procs finds the processes holding a GPU by the links in their
# /proc/PID/fd, which another user reads only with it (here: the target's stdin link).
fd_link() {
  local c; c=$(as_setpriv "$@")
  setpriv --reuid=61999 --regid=61999 --clear-groups --inh-caps="$c" --ambient-caps="$c" readlink "/proc/$target/fd/0" >/dev/null 2>&1
}
# shellcheck disable=SC2086
fd_link $caps && pass "with the unit's capabilities the fd links of a root process are read" || fail "fd links unreadable with $caps"
# shellcheck disable=SC2086
fd_link $(for c in $caps; do [ "$c" = CAP_SYS_PTRACE ] || echo "$c"; done) \
  && fail "fd links read without CAP_SYS_PTRACE: the capability would be idle" || pass "without CAP_SYS_PTRACE the fd links are refused: the capability is needed"
# CAP_PERFMON: the counters watch opens count kernel time, refused at perf_event_paranoid 2 without it.
perf_open='import ctypes, struct, sys
attr = bytearray(128); struct.pack_into("IIQ", attr, 0, 1, 128, 1)  # software task-clock, kernel counted
fd = ctypes.CDLL(None, use_errno=True).syscall(298, ctypes.create_string_buffer(bytes(attr)), int(sys.argv[1]), -1, -1, 8)
sys.exit(0 if fd >= 0 else 1)'
if [ "$(uname -m)" = x86_64 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
  c=$(as_setpriv $caps)
  setpriv --reuid=61999 --regid=61999 --clear-groups --inh-caps="$c" --ambient-caps="$c" /usr/bin/python3 -c "$perf_open" "$target" \
    && pass "with the unit's capabilities a perf counter opens on a root process" || fail "perf_event_open refused with $caps"
  c=$(as_setpriv $(for x in $caps; do [ "$x" = CAP_PERFMON ] || echo "$x"; done))
  setpriv --reuid=61999 --regid=61999 --clear-groups --inh-caps="$c" --ambient-caps="$c" /usr/bin/python3 -c "$perf_open" "$target" \
    && fail "perf_event_open worked without CAP_PERFMON: the capability would be idle" || pass "without CAP_PERFMON the counters are refused: the capability is needed"
else
  echo "note: the CAP_PERFMON check needs x86_64 and perf_event_paranoid >= 2; skipped"
fi
finish
