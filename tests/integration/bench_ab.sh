#!/usr/bin/env bash
# gpubind bench --ab (issue 37 item 4): the user's own job through launch under each strategy in
# turn. The C++ stand-in worker with step times from its output (--step-regex) and from a file
# (--step-file), wall time alone, the plan flags reaching launch, PyTorch DDP (Debian's
# python3-torch), the record read back by --input, and a job that fails, prints no step time or
# runs forever (--timeout): one line each and the documented exit status.
set -u
. "$(dirname "$0")/lib.sh"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
PY=/usr/bin/python3
[ -x $PY ] || skip "no /usr/bin/python3 to read the JSON"
WORKER=$(cd "$(dirname "$GPUBIND")/../examples" 2>/dev/null && pwd)/gpubind_demo_worker
[ -x "$WORKER" ] || skip "the stand-in worker was not built ($WORKER)"
EXAMPLE=$(cd "$(dirname "$0")/../.." && pwd)/examples/ddp_train.py
REGEX='step [0-9]+ (?<ms>[0-9.]+) ms'

# 1. The stand-in worker's printed step times, two ranks, four rounds (the fewest runs of each
#    policy a verdict needs).
"$GPUBIND" bench --ab closest,none -n 2 --rounds 4 --step-regex "$REGEX" --json -- "$WORKER" --steps 30 --print-steps \
  >"$WORK/worker.json" 2>"$WORK/worker.err"
rc=$?
[ $rc = 0 ] && pass "bench --ab closest,none -n 2 on the stand-in worker" || fail "rc $rc: $(cat "$WORK/worker.err")"
grep -q "round 4 of 4: " "$WORK/worker.err" && pass "progress per run on stderr" || fail "no progress: $(cat "$WORK/worker.err")"
check_json "$WORK/worker.json" <<'PYEOF' || fail "the worker record"
runs = [(r["strategy"], r["round"]) for r in j["runs"]]
check(runs == [("closest", 0), ("none", 0), ("none", 1), ("closest", 1), ("closest", 2), ("none", 2), ("none", 3), ("closest", 3)],
      "the strategies alternate, each round starting one further along", runs)
check(all(len(r["step_ms"]) == 25 for r in j["runs"]), "30 steps printed by rank 0, the first 5 skipped (--warmup)",
      [len(r["step_ms"]) for r in j["runs"]])
check(j["config"]["ranks"] == 2 and j["config"]["launch_args"] == ["-n", "2"], "2 ranks through launch -n 2", j["config"])
res = {r["strategy"]: r for r in j["results"]}
check(res["closest"]["p50_vs_base"] is None, "closest is the base")
v = res["none"]["p50_vs_base"]
check(v and v["low"] <= v["ratio"] <= v["high"] and v["verdict"] in ("faster", "slower", "no significant difference"),
      f"none against closest: {v}", v)
PYEOF

# The record reads back: the same report as JSON, byte for byte, and as text.
"$GPUBIND" bench --input "$WORK/worker.json" --json >"$WORK/again.json" 2>&1 && cmp -s "$WORK/worker.json" "$WORK/again.json" \
  && pass "--input of an --ab record gives the same JSON" || fail "--input: $(diff "$WORK/worker.json" "$WORK/again.json" | head -5)"
"$GPUBIND" bench --input "$WORK/worker.json" >"$WORK/again.txt" 2>&1 && grep -q "^none .* \[" "$WORK/again.txt" \
  && grep -q "against closest" "$WORK/again.txt" && pass "--input reports it as text with its verdict" \
  || fail "--input text: $(cat "$WORK/again.txt")"

# 2. A step file the job writes (rank 0), removed by bench before every run.
echo "9999" >"$WORK/steps.txt"
"$GPUBIND" bench --ab cpu-only,closest -n 2 --rounds 2 --warmup 2 --step-file "$WORK/steps.txt" --json \
  -- "$WORKER" --steps 12 --step-file "$WORK/steps.txt" >"$WORK/file.json" 2>"$WORK/file.err" \
  && check_json "$WORK/file.json" <<'PYEOF' || fail "--step-file: $(cat "$WORK/file.err")"
check(j["config"]["source"] == "file", "the step times came from the file")
check(all(len(r["step_ms"]) == 10 for r in j["runs"]) and all(x < 9999 for r in j["runs"] for x in r["step_ms"]),
      "10 of 12 steps per run, none left from before the run", [r["step_ms"][:3] for r in j["runs"]])
PYEOF

# A job that writes no step file: the file left from before is not read as this run's.
echo "9999" >"$WORK/steps.txt"
"$GPUBIND" bench --ab closest,none --step-file "$WORK/steps.txt" -- true >/dev/null 2>"$WORK/nofile.err"
rc=$?
[ $rc = 1 ] && grep -q "the job wrote no --step-file" "$WORK/nofile.err" && [ ! -e "$WORK/steps.txt" ] \
  && pass "no step file written: $(tail -1 "$WORK/nofile.err")" || fail "no step file -> $rc: $(cat "$WORK/nofile.err")"

# 3. Wall time only: one sample per run, too few for an interval, and the report says so.
"$GPUBIND" bench --ab closest,none --rounds 2 -- true >"$WORK/wall.txt" 2>&1 \
  && grep -q "wall time: one sample per run, 2 sample(s) for a strategy: no ratio against closest" "$WORK/wall.txt" \
  && grep -q "samples: each run's wall time" "$WORK/wall.txt" && pass "wall time alone: no interval, said" \
  || fail "wall time: $(cat "$WORK/wall.txt")"

# 4. The plan flags reach launch: with CPU 0 reserved, both pinning policies put the one rank on
# CPU 1, which its "step time" reports (the first CPU it may run on).
FIRST_CPU='echo "cpu $(sed -n "s/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p" /proc/self/status)"'
"$GPUBIND" bench --ab closest,cpu-only -n 1 --reserve 0 --rounds 1 --warmup 0 --step-regex 'cpu (?<ms>[0-9]+)' --json \
  -- sh -c "$FIRST_CPU" >"$WORK/flags.json" 2>"$WORK/flags.err" \
  && check_json "$WORK/flags.json" <<'PYEOF' || fail "plan flags: $(cat "$WORK/flags.err")"
check([r["step_ms"] for r in j["runs"]] == [[1.0], [1.0]], "-n 1 --reserve 0 reached launch: the rank ran on CPU 1 under both",
      [r["step_ms"] for r in j["runs"]])
PYEOF

# 5. PyTorch DDP, two ranks (gloo on CPU).
if $PY -c 'import torch.distributed' 2>/dev/null; then
  "$GPUBIND" bench --ab closest,none -n 2 --rounds 2 --timeout 300 --step-regex "$REGEX" --json \
    -- $PY "$EXAMPLE" --steps 30 --print-steps >"$WORK/ddp.json" 2>"$WORK/ddp.err"
  rc=$?
  [ $rc = 0 ] && check_json "$WORK/ddp.json" <<'PYEOF' || fail "DDP: rc $rc: $(tail -3 "$WORK/ddp.err")"
check(all(len(r["step_ms"]) == 25 for r in j["runs"]) and len(j["runs"]) == 4, "DDP: 4 runs of 25 measured steps",
      [len(r["step_ms"]) for r in j["runs"]])
check(all(r["step_ms"]["count"] == 50 for r in j["results"]), "50 samples per strategy")
v = [r for r in j["results"] if r["strategy"] == "none"][0]["p50_vs_base"]
# Two runs of each policy: a ratio with its interval, and no verdict (too few runs for any test).
check(v is not None and v["low"] <= v["ratio"] <= v["high"] and v["verdict"] == "too few runs to tell", f"DDP none against closest: {v}", v)
PYEOF
else
  echo "SKIP (part): $PY has no torch (Debian package python3-torch): the DDP A/B"
fi

# 6. Bad runs: one error line (after the notes on what the node can show), the documented status,
# nothing left running.
one_line() { [ "$(grep -c '^gpubind: error: ' "$1")" = 1 ] && tail -1 "$1" | grep -q '^gpubind: error: '; }
"$GPUBIND" bench --ab closest,none --rounds 2 -- sh -c 'echo giving up >&2; exit 3' >/dev/null 2>"$WORK/bad.err"
rc=$?
[ $rc = 1 ] && one_line "$WORK/bad.err" && grep -q "round 1, closest: the command exited 3 .*its last line on stderr: \[0\] giving up" "$WORK/bad.err" \
  && pass "a failing command: $(tail -1 "$WORK/bad.err")" || fail "failing command -> $rc: $(cat "$WORK/bad.err")"
"$GPUBIND" bench --ab closest,none --rounds 2 --step-regex "$REGEX" -- echo no steps here >/dev/null 2>"$WORK/none.err"
rc=$?
[ $rc = 1 ] && one_line "$WORK/none.err" && grep -q "no line of rank 0 matched --step-regex" "$WORK/none.err" \
  && pass "no step times: $(tail -1 "$WORK/none.err")" || fail "no step times -> $rc: $(cat "$WORK/none.err")"
tag="gpubind-ab-timeout-$$"
"$GPUBIND" bench --ab closest,none --timeout 1 -- sh -c "sleep 3$$; : $tag" >/dev/null 2>"$WORK/late.err"
rc=$?
[ $rc = 124 ] && one_line "$WORK/late.err" && grep -q "still running after 1 s (--timeout): stopped" "$WORK/late.err" \
  && pass "a job that runs on: $(tail -1 "$WORK/late.err")" || fail "--timeout -> $rc: $(cat "$WORK/late.err")"
left() { ! pgrep -f "$tag" >/dev/null && ! pgrep -fx "sleep 3$$" >/dev/null; }
wait_until 10 left && pass "its ranks and what they started were stopped with it" \
  || { fail "a rank outlived --timeout"; pkill -f "$tag"; pkill -fx "sleep 3$$"; }

# --ab-env (issue 55): one variable's values as the arms, under one policy; auto leaves it unset,
# so launch sizes it from the rank's cores. Each run's rank writes the value it got.
cat >"$WORK/pool.sh" <<'SHEOF'
#!/bin/sh
echo "${OMP_NUM_THREADS:-unset}" >>"$1"
for i in 1 2 3; do echo "step $i 1.0 ms"; done
SHEOF
chmod +x "$WORK/pool.sh"
"$GPUBIND" bench --ab-env OMP_NUM_THREADS=1,3,auto -n 1 --rounds 2 --warmup 0 --step-regex "$REGEX" --json -- "$WORK/pool.sh" "$WORK/seen" \
  >"$WORK/env.json" 2>"$WORK/env.err"
rc=$?
[ $rc = 0 ] && pass "bench --ab-env OMP_NUM_THREADS=1,3,auto" || fail "rc $rc: $(cat "$WORK/env.err")"
cores=$("$GPUBIND" plan -n 1 --format env --rank 0 2>/dev/null | sed -n 's/^export OMP_NUM_THREADS=//p')
[ "$(sort "$WORK/seen" | tr '\n' ' ')" = "$(printf '%s\n' 1 1 3 3 "$cores" "$cores" | sort | tr '\n' ' ')" ] \
  && pass "each arm's rank got its value, and auto the rank's $cores core(s)" || fail "values seen: $(tr '\n' ' ' <"$WORK/seen")"
check_json "$WORK/env.json" <<'PYEOF' || fail "the --ab-env record"
check(j["config"]["strategies"] == ["OMP_NUM_THREADS=1", "OMP_NUM_THREADS=3", "OMP_NUM_THREADS=auto"], "the arms are the values", j["config"]["strategies"])
check(j["config"]["launch_args"][:2] == ["--policy", "closest"], "under one policy, closest by default", j["config"]["launch_args"])
PYEOF
finish
