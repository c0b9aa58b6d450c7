#!/usr/bin/env bash
# watch's Prometheus side with Prometheus' own tool: the exposition `watch --textfile` writes
# passes `promtool check metrics`; the shipped alert rules pass `promtool check rules` and their
# unit tests (`promtool test rules`); every metric the rules and the Grafana dashboard name is one
# watch exports; the example scrape configuration passes `promtool check config`.
set -u
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || skip "promtool (Debian package prometheus) not found"
here=$(cd "$(dirname "$0")/../.." && pwd)
W=$here/tests/data/check/watch-h100

"$GPUBIND" watch --topology example:dgx-h100 --root "$W/0" --root "$W/1" --root "$W/2" --children-of 1000 \
  --textfile "$WORK/gpubind.prom" >/dev/null 2>"$WORK/err"
rc=$?
[ $rc = 3 ] && [ -s "$WORK/gpubind.prom" ] && pass "watch --textfile wrote the exposition (exit 3: findings)" \
  || fail "watch --textfile: rc $rc: $(cat "$WORK/err")"
promtool check metrics <"$WORK/gpubind.prom" >"$WORK/lint" 2>&1 && pass "promtool check metrics accepts it" \
  || fail "promtool check metrics: $(cat "$WORK/lint")"
labels='node="dgx-h100",pid="2030",rank="11",local_rank="3",gpu="3",UUID="",pci="0000:5d:00.0",slurm_job_id="",slurm_step_id="",torchelastic_run_id="",k8s_namespace="",k8s_pod="",k8s_container=""'
grep -qF "gpubind_rank_migrations_total{$labels} 60" "$WORK/gpubind.prom" \
  && pass "rank 11's 60 migrations are exported with its labels (GPU index 3 as dcgm-exporter numbers it)" \
  || fail "migrations: $(cat "$WORK/gpubind.prom")"
# The recorded rank ran its 2 s of CPU time off its GPU's package: the counters alerts divide.
grep -qF "gpubind_rank_cross_numa_cpu_seconds_total{$labels} 2" "$WORK/gpubind.prom" \
  && grep -qF "gpubind_rank_cpu_seconds_total{$labels} 2" "$WORK/gpubind.prom" \
  && pass "rank 11's CPU time off its GPU's node is counted (2 of 2 s)" || fail "cross-NUMA seconds: $(grep 2030 "$WORK/gpubind.prom")"
grep -q 'pid="2070"' "$WORK/gpubind.prom" && fail "the exited rank (PID 2070) is still exported" || pass "an exited rank is no longer exported"

# Every metric a rule names is one watch exports.
grep -o '^# HELP [a-z_]*' "$WORK/gpubind.prom" | cut -d' ' -f3 | sort -u >"$WORK/exported"
grep -oE 'gpubind_[a-z_]+' "$here/deploy/prometheus/gpubind.rules.yml" | sort -u >"$WORK/used"
unknown=$(comm -23 "$WORK/used" "$WORK/exported")
[ -z "$unknown" ] && pass "the rules name only exported metrics ($(wc -l <"$WORK/used") of $(wc -l <"$WORK/exported"))" \
  || fail "the rules name metrics watch does not export: $unknown"

# The Grafana dashboard: valid JSON, and every metric a panel queries is one watch exports.
/usr/bin/python3 - "$here/deploy/grafana/gpubind.json" "$WORK/exported" <<'PY' && pass "the Grafana dashboard queries only exported metrics, joins DCGM on UUID and lists findings now" || fail "the dashboard"
import json, re, sys
d = json.load(open(sys.argv[1]))
exported = set(open(sys.argv[2]).read().split())
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])] + [v.get("query", "") for v in d["templating"]["list"]]
used = {m for e in exprs for m in re.findall(r"gpubind_[a-z_]+", e)}
assert used and used <= exported, sorted(used - exported)
# gpubind's series joined to dcgm-exporter's on UUID, and the findings-now table from ALERTS_FOR_STATE
assert any("on (UUID)" in e and "DCGM_FI_" in e for e in exprs), "no panel joins DCGM_FI_* on UUID"
assert any("ALERTS_FOR_STATE" in e for e in exprs), "no findings-now panel"
PY
# The example scrape configuration, with the rules beside it, as Prometheus itself reads it.
cp "$here/deploy/prometheus/prometheus.example.yml" "$here/deploy/prometheus/gpubind.rules.yml" "$WORK/"
promtool check config "$WORK/prometheus.example.yml" >"$WORK/out" 2>&1 && pass "promtool check config accepts the example scrape config" \
  || fail "promtool check config: $(cat "$WORK/out")"
promtool check rules "$here/deploy/prometheus/gpubind.rules.yml" >"$WORK/out" 2>&1 && pass "promtool check rules" \
  || fail "promtool check rules: $(cat "$WORK/out")"
(cd "$here/tests/prometheus" && promtool test rules gpubind.rules.test.yml) >"$WORK/out" 2>&1 \
  && pass "promtool test rules: every alert fires on its problem and not on a healthy rank" || fail "promtool test rules: $(cat "$WORK/out")"
finish
