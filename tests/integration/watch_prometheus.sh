#!/usr/bin/env bash
# The shipped alert rules, unchanged, on a real Prometheus (Debian's) that scrapes
# `gpubind watch --listen` every 5 s with its defaults (honor_labels: false) and a Kubernetes-style
# `node` target label, and on node_exporter's textfile collector fed by `watch --textfile`.
#
# The node is tests/data/check/two-socket-2cpu.json: this machine's CPU n stands for package n,
# GPU 0 is on package 0, GPU 1 on package 1. Job 4242's rank 0 (GPU 0) is re-pinned across the
# packages every second (the issue's reproducer); job 5000's two ranks are bound to their GPUs'
# CPUs and never move. GpubindRankCrossNuma and GpubindRankDrifted must fire for job 4242 within
# 3 minutes of the first scrape; nothing may fire for job 5000. The time from the first re-pin to
# each alert firing is printed.
#
# Where a mount namespace of its own can be had (root), the GPUs are stand-in device files
# (lib.sh: stand_in_gpus) that the ranks hold open, a stand-in nvidia-persistenced holds both
# (as the real one does on every GPU node), and watch watches every GPU process, its default.
# Elsewhere the ranks name their GPU in GPUBIND_GPU and watch selects them by command line.
# numa_maps is not read (--mem-every 0): the stand-in node's memory is all on this machine's one
# node, which would make package 1's ranks REMOTE_MEMORY.
set -u
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || skip "prometheus (Debian package prometheus) not found"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs (one per stand-in package)"
devices=
if private_mounts "$@" && stand_in_gpus 0000:18:00.0 0000:86:00.0; then devices=1
else echo "note: no stand-in GPU device files (not root, or no mount namespace): ranks name their GPU in GPUBIND_GPU"; fi
here=$(cd "$(dirname "$0")/../.." && pwd)
topology=$here/tests/data/check/two-socket-2cpu.json
export GPUBIND_CACHE_DIR="$WORK/cache"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
metrics_port=$(free_port)
prom_port=$(free_port)
ne_port=$(free_port)

# rank JOB RANK N CPU: a rank as its launcher would start it, pinned to CPU, driving GPU N
# (holding /dev/nvidiaN open, or naming its PCI address in GPUBIND_GPU). It steps as a training
# rank does, 50 ms of work then 100 ms of waiting (a third of a CPU, well over the alerts' 5 %),
# so the three ranks leave the other tests of the suite a CPU.
pci=(0000:18:00.0 0000:86:00.0)
step='import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.05: pass
    time.sleep(0.1)'
rank() {
  if [ -n "$devices" ]; then
    env SLURM_JOB_ID=$1 SLURM_STEP_ID=0 RANK=$2 LOCAL_RANK=$2 taskset -c $4 /usr/bin/python3 -c "$step" 3</dev/nvidia$3 &
  else
    env SLURM_JOB_ID=$1 SLURM_STEP_ID=0 RANK=$2 LOCAL_RANK=$2 GPUBIND_GPU=${pci[$3]} taskset -c $4 /usr/bin/python3 -c "$step" &
  fi
  pids+=($!)
}
rank 5000 0 0 0
rank 5000 1 1 1
rank 4242 0 0 0; moved=$!
select=(--match 'time.monotonic')
if [ -n "$devices" ]; then
  cp "$(command -v sleep)" "$WORK/nvidia-persistenced"
  "$WORK/nvidia-persistenced" 1000 3</dev/nvidia0 4</dev/nvidia1 5</dev/nvidiactl &
  pids+=($!)
  select=()  # every GPU process: the ranks and nvidia-persistenced
fi

mkdir -p "$WORK/textfile"
# dcgm-exporter's GPU utilization as it labels it (gpu index, UUID), served by the textfile
# collector beside watch's: the dashboard's join of the two on UUID is run below.
cat >"$WORK/textfile/dcgm.prom" <<'PROM'
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-11111111-2222-3333-4444-000000000000",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="k8s-node-7"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-11111111-2222-3333-4444-000000000001",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="k8s-node-7"} 41
PROM
NODE_NAME=k8s-node-7 "$GPUBIND" watch --topology "$topology" "${select[@]}" --interval 1 --duration 400 --mem-every 0 \
  --listen 127.0.0.1:$metrics_port --textfile "$WORK/textfile/gpubind.prom" --json >"$WORK/watch.out" 2>"$WORK/watch.err" &
pids+=($!)
up() { /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$metrics_port/healthz', timeout=1)" 2>/dev/null; }
wait_until 20 up && pass "watch --listen answers /healthz" || { fail "watch --listen did not come up: $(cat "$WORK/watch.err")"; finish; }

# The reproducer: from now on rank 0 of job 4242 is re-pinned between the packages every second.
first_drift=$(date +%s)
( while :; do taskset -pc 1 $moved >/dev/null 2>&1; sleep 1; taskset -pc 0 $moved >/dev/null 2>&1; sleep 1; done ) &
pids+=($!)

if command -v prometheus-node-exporter >/dev/null; then
  prometheus-node-exporter --collector.disable-defaults --collector.textfile --collector.textfile.directory="$WORK/textfile" \
    --web.listen-address=127.0.0.1:$ne_port >"$WORK/ne.log" 2>&1 &
  pids+=($!)
  node_job="  - job_name: node
    static_configs: [{targets: ['127.0.0.1:$ne_port']}]"
else
  node_job=
  echo "skip: node_exporter's textfile collector: prometheus-node-exporter not installed"
fi
# Prometheus' defaults but the intervals; `node` set on the target as a Kubernetes pod's node
# name would be (__meta_kubernetes_pod_node_name), which renames watch's own to exported_node.
cat >"$WORK/prom.yml" <<YML
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: ["$here/deploy/prometheus/gpubind.rules.yml"]
scrape_configs:
  - job_name: gpubind
    static_configs: [{targets: ["127.0.0.1:$metrics_port"], labels: {__meta_kubernetes_pod_node_name: k8s-node-7}}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: node
$node_job
YML
prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address=127.0.0.1:$prom_port >"$WORK/prom.log" 2>&1 &
pids+=($!)

# api PATH PYTHON_EXPR: true when the expression over the JSON answer (d) holds.
api() {
  /usr/bin/python3 - "http://127.0.0.1:$prom_port$1" "$2" <<'PY' 2>/dev/null
import json, sys, urllib.parse, urllib.request
path, _, query = sys.argv[1].partition("?query=")
url = path + ("?query=" + urllib.parse.quote(query) if query else "")
d = json.load(urllib.request.urlopen(url, timeout=2))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
scraped() { api "/api/v1/query?query=gpubind_rank_cpu_seconds_total{job=\"gpubind\",slurm_job_id=\"4242\"}" "len(d['data']['result']) == 1"; }
scraped_or_pause() { scraped || { sleep 1; false; }; }
wait_until 60 scraped_or_pause && scrape_start=$(date +%s) && pass "Prometheus finds job 4242's rank by {slurm_job_id=\"4242\"} next to its own job=\"gpubind\"" \
  || { fail "no series for slurm_job_id 4242: $(tail -3 "$WORK/prom.log"); watch: $(tail -3 "$WORK/watch.err")"; finish; }
api "/api/v1/query?query=gpubind_rank_cpu_seconds_total{job=\"gpubind\",slurm_job_id=\"4242\"}" \
  "all(r['metric']['node'] == 'k8s-node-7' and r['metric']['exported_node'] == 'k8s-node-7' and r['metric']['UUID'] == 'GPU-11111111-2222-3333-4444-000000000000' and r['metric']['gpu'] == '0' for r in d['data']['result'])" \
  && pass "the target's node label and watch's (\$NODE_NAME, not the hostname) agree; the GPU has its index and UUID" \
  || fail "labels: $(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$prom_port/api/v1/query?query=gpubind_rank_cpu_seconds_total').read()[:600])")"

# firing ALERT JOB: the alert is firing for that Slurm job's rank.
firing() { api /api/v1/alerts "any(a['labels']['alertname'] == '$1' and a['labels'].get('slurm_job_id') == '$2' and a['state'] == 'firing' for a in d['data']['alerts'])"; }
cross_at= drift_at=
both_firing() {
  [ -z "$cross_at" ] && firing GpubindRankCrossNuma 4242 && cross_at=$(date +%s)
  [ -z "$drift_at" ] && firing GpubindRankDrifted 4242 && drift_at=$(date +%s)
  [ -n "$cross_at" ] && [ -n "$drift_at" ]
}
# 3 minutes of scraping from the first scrape that saw the rank. Prometheus evaluates every 5 s:
# asked once a second, not at wait_until's 20 times (two Python queries each, two minutes long).
both_firing_or_pause() { both_firing || { sleep 1; false; }; }
wait_until $((180 - ($(date +%s) - scrape_start))) both_firing_or_pause
[ -n "$cross_at" ] && pass "GpubindRankCrossNuma fires for job 4242 $((cross_at - first_drift)) s after the first re-pin ($((cross_at - scrape_start)) s of scraping)" \
  || fail "GpubindRankCrossNuma not firing after 3 minutes: $(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$prom_port/api/v1/alerts').read()[:600])")"
[ -n "$drift_at" ] && pass "GpubindRankDrifted fires for job 4242 $((drift_at - first_drift)) s after the first re-pin ($((drift_at - scrape_start)) s of scraping)" \
  || fail "GpubindRankDrifted not firing after 3 minutes"
# The bound job, over the same time: no alert of any kind, firing or pending, for its ranks.
alerts_of() {
  /usr/bin/python3 -c "import json, sys, urllib.request
for a in json.load(urllib.request.urlopen('http://127.0.0.1:$prom_port/api/v1/alerts'))['data']['alerts']:
    if str(a['labels'].get('slurm_job_id')) == sys.argv[1]: print(a['state'], a['labels'], a['annotations'])" "$1"
}
[ -z "$(alerts_of 5000)" ] && pass "job 5000, bound and steady, has no alert (firing or pending)" || fail "job 5000 has alerts: $(alerts_of 5000)"
# nvidia-persistenced, counted as a rank, used no CPU: the ranks' spread of CPU time was then
# exactly 1.0 at every interval (and GpubindNodeImbalance pending from the first one). The ranks
# alone may differ on a loaded machine, never by all of it.
if [ -n "$devices" ]; then
  api "/api/v1/query?query=max_over_time(gpubind_node_rank_imbalance_ratio{job=\"gpubind\"}[10m])" \
    "len(d['data']['result']) == 1 and float(d['data']['result'][0]['value'][1]) < 0.99" \
    && pass "nvidia-persistenced takes no part in the ranks' CPU-time spread (never 100 %)" \
    || fail "imbalance with persistenced: $(grep imbalance "$WORK/textfile/gpubind.prom")"
fi

# The re-pinned thread is named in the change counter (python3, less its digit: python).
api "/api/v1/query?query=gpubind_rank_affinity_changes_total{job=\"gpubind\",slurm_job_id=\"4242\"}" \
  "any(r['metric']['thread'] == 'python' and float(r['value'][1]) >= 10 for r in d['data']['result'])" \
  && pass "gpubind_rank_affinity_changes_total counts the re-pins by thread name" \
  || fail "affinity changes: $(grep affinity_changes "$WORK/textfile/gpubind.prom")"

if [ -n "$node_job" ]; then
  api "/api/v1/query?query=gpubind_rank_cpu_seconds_total{job=\"node\",slurm_job_id=\"4242\"}" "len(d['data']['result']) == 1" \
    && pass "the same series reach Prometheus through node_exporter's textfile collector" \
    || fail "textfile collector: $(tail -3 "$WORK/ne.log")"
fi

# Every query of the shipped dashboard, as Grafana would send it ($node: every node), parses and
# runs; the findings table lists job 4242's alerts with when they began; the DCGM join gives each
# rank its GPU's DCGM utilization.
/usr/bin/python3 - "$here/deploy/grafana/gpubind.json" "http://127.0.0.1:$prom_port" "$node_job" <<'PY' >"$WORK/dash" 2>&1 \
  && pass "every dashboard query runs on Prometheus; findings now lists job 4242's alerts; the DCGM join names the ranks" \
  || fail "dashboard queries: $(cat "$WORK/dash")"
import json, sys, urllib.parse, urllib.request
d = json.load(open(sys.argv[1]))
def query(e):
    e = e.replace("$node", ".*")
    r = json.load(urllib.request.urlopen(sys.argv[2] + "/api/v1/query?query=" + urllib.parse.quote(e), timeout=5))
    assert r["status"] == "success", (e, r)
    return r["data"]["result"]
results = {t["expr"]: query(t["expr"]) for p in d["panels"] for t in p.get("targets", [])}
since = [r for e, rs in results.items() if "ALERTS_FOR_STATE" in e for r in rs if r["metric"].get("slurm_job_id") == "4242"]
assert {r["metric"]["alertname"] for r in since} >= {"GpubindRankCrossNuma", "GpubindRankDrifted"}, since
if sys.argv[3]:  # the DCGM stand-in came through node_exporter
    joined = [r for e, rs in results.items() if "DCGM_FI_DEV_GPU_UTIL" in e for r in rs]
    assert any(r["metric"].get("rank") == "0" and r["metric"].get("slurm_job_id") == "4242" and r["value"][1] == "97" for r in joined), joined
PY
finish
