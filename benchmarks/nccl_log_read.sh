#!/usr/bin/env bash
# What `check --nccl-log` costs on a big log: tests/data/nccl/good-2.30.log's 8 ranks as 512 hosts
# (4096 ranks), each host's lines 20 times over (about 250 MB in one file, as one stream of a big
# job's NCCL_DEBUG=INFO output), read and judged against the DGX H100 example three times: wall
# time and peak resident memory of each run.
#   benchmarks/nccl_log_read.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$here/tests/data/nccl/good-2.30.log" "$tmp/big.log" <<'PY'
import sys
src = open(sys.argv[1]).read()
with open(sys.argv[2], "w") as f:
    for h in range(512):
        block = src.replace("node01:", f"node{h:03d}:")
        for _ in range(20):
            f.write(block)
PY
echo "log: $(stat -c %s "$tmp/big.log") bytes"
for run in 1 2 3; do
  /usr/bin/time -f "run $run: %e s, peak resident %M kB" "$build/src/gpubind" check --topology example:dgx-h100 \
    --nccl-log "$tmp/big.log" 2>&1 >"$tmp/out" | tail -1
done
tail -1 "$tmp/out"
