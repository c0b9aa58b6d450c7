#!/usr/bin/env bash
# Teardown under faults (issue 11): TRIALS 4-rank launches (default 100) in which, at a random
# moment, a random rank is SIGKILLed, launch gets SIGTERM or SIGINT, or launch itself is
# SIGKILLed. Measures the time from the fault until no live process is left in any rank's
# process group, checks launch's exit status, and prints max and median per fault.
# Usage: benchmarks/launch_stress.sh [BUILD_DIR] [TRIALS]
set -uo pipefail
build=${1:-build}
trials=${2:-100}
gpubind=$build/src/gpubind
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

live_in_groups() {
  local g c n=0
  for g in "$@"; do
    c=$(awk -v G="$g" '{ sub(/^.*\) /, ""); if ($3 == G && $1 != "Z") c++ } END { print c + 0 }' /proc/[0-9]*/stat 2>/dev/null)
    n=$((n + ${c:-0}))
  done
  echo $n
}
now_us() { echo $(($(date +%s%N) / 1000)); }

for fault in rank-sigkill launch-sigterm launch-sigint launch-sigkill; do
  times=()
  bad=0
  for t in $(seq "$trials"); do
    rm -f "$work"/pid.*
    # A background job of a script starts with SIGINT ignored; give launch the default back.
    env --default-signal=INT "$gpubind" launch -n 4 -q --grace 2 -- sh -c "echo \$\$ > $work/pid.\$LOCAL_RANK; sleep 60; :" 2>/dev/null &
    launcher=$!
    for _ in $(seq 400); do [ "$(ls "$work"/pid.* 2>/dev/null | wc -l)" -ge 4 ] && break; sleep 0.01; done
    groups=$(cat "$work"/pid.*)
    sleep "0.$((RANDOM % 300))"
    start=$(now_us)
    case $fault in
      rank-sigkill) kill -KILL "$(cat "$work/pid.$((RANDOM % 4))")" ;;
      launch-sigterm) kill -TERM $launcher ;;
      launch-sigint) kill -INT $launcher ;;
      launch-sigkill) kill -KILL $launcher ;;
    esac
    for _ in $(seq 1000); do [ "$(live_in_groups $groups)" = 0 ] && break; sleep 0.002; done
    end=$(now_us)
    wait $launcher 2>/dev/null
    rc=$?
    case $fault in
      rank-sigkill|launch-sigkill) want=137 ;;
      launch-sigterm) want=143 ;;
      launch-sigint) want=130 ;;
    esac
    [ $rc = $want ] && [ "$(live_in_groups $groups)" = 0 ] || bad=$((bad + 1))
    times+=($((end - start)))
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000 }')
  max=$(echo "$sorted" | tail -1 | awk '{ print $1 / 1000 }')
  echo "  $fault: $trials trials, teardown median ${median} ms, max ${max} ms, wrong status or survivors: $bad"
done
