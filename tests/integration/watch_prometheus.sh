#!/usr/bin/env bash
# A real Prometheus (Debian's) on loopback scrapes `gpubind watch --listen`: the migrations of a
# process this script moves between CPUs 0 and 1 every 100 ms reach Prometheus, and the shipped
# GpubindRankDrifted alert fires for it (its allowed CPUs keep changing). The alert rules are the
# shipped file with each `for:` hold shortened to 0s, so the test takes seconds, not minutes.
set -u
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || skip "prometheus (Debian package prometheus) not found"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
grep -q nr_migrations /proc/self/sched 2>/dev/null || skip "the kernel has no se.nr_migrations (CONFIG_SCHED_DEBUG)"
here=$(cd "$(dirname "$0")/../.." && pwd)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
metrics_port=$(free_port)
prom_port=$(free_port)

sh -c 'while :; do :; done' &
busy=$!
pids+=($busy)
( while :; do taskset -pc 0 $busy >/dev/null 2>&1; sleep 0.1; taskset -pc 1 $busy >/dev/null 2>&1; sleep 0.1; done ) &
pids+=($!)
"$GPUBIND" watch --pid $busy --interval 0.5 --duration 120 --listen 127.0.0.1:$metrics_port >"$WORK/watch.out" 2>&1 &
watcher=$!
pids+=($watcher)
up() { /usr/bin/python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$metrics_port/healthz', timeout=1)" 2>/dev/null; }
wait_until 20 up && pass "watch --listen answers /healthz" || { fail "watch --listen did not come up: $(cat "$WORK/watch.out")"; finish; }

sed -E 's/^( *for:).*/\1 0s/' "$here/deploy/prometheus/gpubind.rules.yml" >"$WORK/rules.yml"
cat >"$WORK/prom.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$WORK/rules.yml"]
scrape_configs:
  - job_name: gpubind
    static_configs: [{targets: ["127.0.0.1:$metrics_port"]}]
YML
prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address=127.0.0.1:$prom_port >"$WORK/prom.log" 2>&1 &
prom=$!
pids+=($prom)

# api PATH PYTHON_EXPR: true when the expression over the JSON answer (d) holds.
api() {
  /usr/bin/python3 - "http://127.0.0.1:$prom_port$1" "$2" <<'PY' 2>/dev/null
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1], timeout=2))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
q="/api/v1/query?query=gpubind_rank_migrations_total%7Bpid%3D%22$busy%22%7D"
migrations_seen() { api "$q" "any(float(r['value'][1]) > 0 for r in d['data']['result'])"; }
wait_until 60 migrations_seen && pass "Prometheus scraped gpubind_rank_migrations_total > 0 for the moved process" \
  || fail "no migrations in Prometheus: $(tail -3 "$WORK/prom.log"); watch: $(tail -5 "$WORK/watch.out")"
drifted_firing() {
  api /api/v1/alerts "any(a['labels']['alertname'] == 'GpubindRankDrifted' and a['labels'].get('pid') == '$busy' and a['state'] == 'firing' for a in d['data']['alerts'])"
}
wait_until 60 drifted_firing && pass "the shipped GpubindRankDrifted alert fires for it" \
  || fail "GpubindRankDrifted not firing: $(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$prom_port/api/v1/alerts').read()[:400])" 2>&1)"
finish
