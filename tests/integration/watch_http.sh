#!/usr/bin/env bash
# watch --listen against bad clients: one that sends half a request line and stalls, 1000
# keep-alive connections held open at once (each with half a request sent), a 1 MB request line. Sampling goes on at its interval the whole
# time (the server runs on its own threads), /metrics still answers afterwards, and watch is alive.
set -u
. "$(dirname "$0")/lib.sh"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Neither the target nor watch ends by itself before the test is done (the trap ends both): under
# load the 1000 connects alone took over a minute, and a watch bounded to 60 s was gone by then.
sleep 3600 &
target=$!
"$GPUBIND" watch --pid $target --interval 0.2 --json --listen 127.0.0.1:$port >"$WORK/lines" 2>"$WORK/err" &
watcher=$!
trap 'kill $watcher $target 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
up() { /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; }
wait_until 20 up || { fail "watch --listen did not come up: $(cat "$WORK/err")"; finish; }

/usr/bin/python3 - "$port" "$WORK/lines" <<'PY' && pass "stalled, 1000 open and 1 MB-line clients: intervals kept coming, /metrics still answers" || fail "bad clients: $(cat "$WORK/err")"
import resource, socket, sys, time, urllib.request
port, lines = int(sys.argv[1]), sys.argv[2]
def count():
    return sum(1 for _ in open(lines))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < 1100:
    sys.exit(f"the open-file limit ({hard}) is below 1100: cannot hold 1000 connections")
resource.setrlimit(resource.RLIMIT_NOFILE, (4096 if hard == resource.RLIM_INFINITY else min(hard, 4096), hard))
held = []
stalled = socket.create_connection(("127.0.0.1", port)); stalled.sendall(b"GET /met"); held.append(stalled)
start, before_connect = time.monotonic(), count()
# The server's 16 threads each serve one connection; the rest wait in its accept queue, so the
# later connects take a while (SYN retries): the sampling must go on meanwhile.
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
elapsed, during = time.monotonic() - start, count() - before_connect
assert during >= elapsed / 0.2 / 2, (elapsed, during)  # at least half the intervals of 0.2 s
big = socket.create_connection(("127.0.0.1", port), timeout=5)
try:
    big.sendall(b"GET /" + b"a" * (1 << 20) + b" HTTP/1.1\r\n\r\n")
except OSError:
    pass  # the server may close it early: fine
before = count()
time.sleep(2)
after = count()
assert after - before >= 5, (before, after)      # ~10 intervals of 0.2 s in 2 s, with the clients held
for s in held: s.close()
big.close()
# Once the bad clients are gone, scrapes are answered again (each held connection kept one of the
# server's threads until it closed or its 2 s read timeout ran out).
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
assert "gpubind_watch_intervals_total" in body, body[:200]
PY
alive $watcher && pass "watch is still running" || fail "watch died: $(cat "$WORK/err")"
finish
