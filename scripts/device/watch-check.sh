#!/usr/bin/env bash
# Device check 2 (prepare.sh first; carry .gpu; run `bash .gpu/watch-check.sh`): watch's intervals
# on a real GPU now that samples fall due on a schedule, with NVML's 42 ms of PCIe counters per sample.
set -u
D=$PWD/.gpu; W=/tmp/w2; mkdir -p $W
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
G=$D/bin/gpubind
rm -f /tmp/ready
python3 -c 'import torch,time; x=torch.ones(1<<28, device="cuda"); torch.cuda.synchronize(); open("/tmp/ready","w").close(); time.sleep(40)' >$W/holder.txt 2>&1 & HP=$!
for i in $(seq 120); do [ -e /tmp/ready ] && break; sleep 0.5; done
$G --version >$W/version.txt 2>&1
timeout 30 $G watch --pid $HP --interval 1 --duration 6 --json >$W/watch-1s.jsonl 2>$W/watch-1s.err
timeout 30 $G watch --all-gpu-procs --interval 0.25 --count 8 --json >$W/watch-250ms.jsonl 2>$W/watch-250ms.err
timeout 30 $G check --pid $HP --json >$W/check.json 2>&1
curl_ok=0
timeout 20 $G watch --pid $HP --interval 1 --duration 4 --listen 127.0.0.1:9466 >/dev/null 2>&1 & WP=$!
sleep 2.5; (exec 3<>/dev/tcp/127.0.0.1/9466 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) >$W/metrics.txt 2>&1
wait $WP
kill $HP 2>/dev/null; wait $HP 2>/dev/null
tar czf $OUT/w2.tgz -C /tmp w2
for f in watch-1s watch-250ms; do echo "== $f"; python3 -c '
import json,sys
for l in open(sys.argv[1]):
    j=json.loads(l)
    if j["type"]=="interval": print(round(j["start"],4), round(j["end"],4), round(j["end"]-j["start"],4), [g.get("utilization") for g in j["gpus"]])
    else: print("summary", j["intervals"], round(j["seconds"],4))
' $W/$f.jsonl; cat $W/$f.err | head -3; done
grep -E "^gpubind_(watch_sample_seconds|gpu_utilization_ratio|gpu_pcie_tx|watch_intervals_total)" $W/metrics.txt | head -8
