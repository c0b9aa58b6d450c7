#!/usr/bin/env bash
# gpubind launch as a torchrun drop-in: torchrun's command line (only the program name changed)
# runs a PyTorch DDP script; every variable torchrun sets; --max-restarts; the rendezvous
# timeout; --tag-output with global ranks; --log-dir with --redirects/--tee.
set -u
. "$(dirname "$0")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
export GPUBIND_CACHE_DIR=off

# 1. torchrun --standalone --nproc_per_node=2 examples/ddp_train.py --steps 5, as torch 1.13
#    spells it, and as torch 2.x spells it. torchrun runs the script with its own Python; here
#    Debian's (the one with torch) is first on PATH.
if $PY -c 'import torch.distributed' 2>/dev/null; then
  for flags in "--standalone --nproc_per_node=2" "--nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint localhost:0"; do
    out=$(cd "$REPO" && PATH=/usr/bin:$PATH timeout 300 "$GPUBIND" launch $flags -q examples/ddp_train.py --steps 5 2>"$WORK/err")
    rc=$?
    n=$(echo "$out" | grep -c '^DDP .*"world_size": 2')
    [ $rc = 0 ] && [ "$n" = 2 ] && pass "DDP under 'gpubind launch $flags SCRIPT': 2 ranks" \
      || fail "DDP ($flags) rc $rc: $out $(tail -5 "$WORK/err")"
  done
else
  echo "note: Debian's python3-torch is missing; the DDP case is not run"
fi

# 2. Every variable torchrun (torch 1.13) sets, with --role, --rdzv-id, --max-restarts.
probe='echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $ROLE_RANK $ROLE_WORLD_SIZE $ROLE_NAME $TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_USE_AGENT_STORE $NCCL_ASYNC_ERROR_HANDLING $MASTER_ADDR"'
out=$("$GPUBIND" launch --nproc_per_node 2 --no_python --role trainer --rdzv_id job42 --max_restarts 2 --monitor_interval 1 -q \
  sh -c "$probe" 2>/dev/null | sort)
want="0 0 2 2 0 1 0 2 trainer job42 0 2 False 1 127.0.0.1
1 1 2 2 0 1 1 2 trainer job42 0 2 False 1 127.0.0.1"
[ "$out" = "$want" ] && pass "torchrun's environment: $(echo "$out" | head -1)" || fail "environment: [$out] want [$want]"

# 3. --max-restarts: the group fails on its first attempt and succeeds on the restart.
"$GPUBIND" launch -n 2 --max-restarts 1 -q -- sh -c '[ "$TORCHELASTIC_RESTART_COUNT" -ge 1 ] || exit 3' 2>"$WORK/err"
rc=$?
[ $rc = 0 ] && grep -q "restart 1 of 1" "$WORK/err" && pass "--max-restarts 1: failed once, restarted, exit 0" \
  || fail "max restarts (rc $rc): $(cat "$WORK/err")"
"$GPUBIND" launch -n 2 --max-restarts 0 -q -- sh -c 'exit 3' 2>/dev/null
rc=$?
[ $rc = 3 ] && pass "--max-restarts 0: the first failure's status (3)" || fail "no restarts: rc $rc"

# 4. Node 1 of 2 with an unreachable master: an error after the timeout, not a hang, nothing run.
port=$($PY -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
rm -f "$WORK/ran"
timeout 60 "$GPUBIND" launch --nnodes 2 --node_rank 1 --master_addr 127.0.0.1 --master_port "$port" \
  --rdzv_conf join_timeout=2 --nproc_per_node 1 -q --no_python touch "$WORK/ran" >"$WORK/out" 2>&1
rc=$?
[ $rc = 1 ] && [ ! -e "$WORK/ran" ] && grep -q "^gpubind: error: rendezvous with 127.0.0.1:$port: not reachable after 2 s" "$WORK/out" \
  && pass "unreachable master: error after the 2 s timeout, exit 1" || fail "rendezvous timeout (rc $rc): $(cat "$WORK/out")"

# 5. A reachable master (a listener standing in for node 0's store): node 1 starts its ranks,
#    and --tag-output prefixes the global ranks 2 and 3.
$PY -c 'import socket,sys,time;s=socket.socket();s.bind(("127.0.0.1",int(sys.argv[1])));s.listen();time.sleep(30)' "$port" &
listener=$!
wait_until 10 $PY -c 'import socket,sys;socket.create_connection(("127.0.0.1",int(sys.argv[1])),1)' "$port"
out=$(timeout 60 "$GPUBIND" launch --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$port" -n 2 --tag-output -q \
  -- sh -c 'echo rank=$RANK' 2>/dev/null | sort)
kill $listener 2>/dev/null; wait $listener 2>/dev/null
[ "$out" = "[2] rank=2
[3] rank=3" ] && pass "node 1 of 2: rendezvous reached, output tagged with global ranks 2 and 3" || fail "node 1 output: [$out]"

# 6. --log-dir with --redirects 3 (files only) and --tee 1 (stdout also on the console).
out=$("$GPUBIND" launch -n 2 -q --log-dir "$WORK/logs" --rdzv-id r1 --redirects 3 --tee 1 --no-python \
  sh -c 'echo out$LOCAL_RANK; echo err$LOCAL_RANK >&2' 2>"$WORK/err" | sort | tr '\n' ' ')
files=$(cd "$WORK/logs" && find . -type f | sort | tr '\n' ' ')
[ "$out" = "out0 out1 " ] && ! grep -q "^err[01]$" "$WORK/err" \
  && [ "$files" = "./r1/attempt_0/0/stderr.log ./r1/attempt_0/0/stdout.log ./r1/attempt_0/1/stderr.log ./r1/attempt_0/1/stdout.log " ] \
  && [ "$(cat "$WORK/logs/r1/attempt_0/1/stderr.log")" = err1 ] && [ "$(cat "$WORK/logs/r1/attempt_0/0/stdout.log")" = out0 ] \
  && pass "--log-dir/--redirects/--tee: torchrun's file layout, stdout teed, stderr to files only" \
  || fail "logs: console [$out], files [$files], stderr [$(cat "$WORK/err")]"
finish
