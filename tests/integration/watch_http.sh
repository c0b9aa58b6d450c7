#!/usr/bin/env bash
# watch --listen against hostile clients on loopback (issue 29 item 5). Each case failed against
# the thread-per-connection server it replaced (cpp-httplib with 16 threads):
#   - 1000 idle connections and 100 slow clients sending a header line every 0.5 s: a scrape is
#     answered while they are all connected, sampling keeps its interval, and the slow ones are
#     cut off by the request deadline (408) instead of holding the server for as long as they go on;
#   - a client streaming 35 MiB of small headers: 431 after the head limit, and watch's memory
#     does not grow by what it sent;
#   - more header lines than the limit: 431;
#   - a watch whose descriptor limit allows only 128 connections: 300 idle connections do not
#     keep a scrape out (the oldest waiting one is evicted for it).
set -u
. "$(dirname "$0")/lib.sh"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
small_port=$(free_port)
# Neither the target nor watch ends by itself before the test is done (the trap ends them).
sleep 3600 &
target=$!
"$GPUBIND" watch --pid $target --interval 0.2 --json --listen 127.0.0.1:$port >"$WORK/lines" 2>"$WORK/err" &
watcher=$!
# The descriptor limit of this one leaves it 128 connections (half of 256).
prlimit --nofile=256:256 "$GPUBIND" watch --pid $target --interval 1 --listen 127.0.0.1:$small_port >/dev/null 2>"$WORK/err-small" &
small=$!
trap 'kill $watcher $small $target 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
up() { /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$1/healthz', timeout=1)" 2>/dev/null; }
wait_until 20 up $port || { fail "watch --listen did not come up: $(cat "$WORK/err")"; finish; }
wait_until 20 up $small_port || { fail "the second watch --listen did not come up: $(cat "$WORK/err-small")"; finish; }

/usr/bin/python3 - "$port" "$WORK/lines" "$watcher" <<'PY' && pass "1000 idle and 100 slow clients connected: /metrics answered, intervals kept coming, the slow ones cut off by the deadline" || fail "idle and slow clients: $(cat "$WORK/err")"
import resource, socket, sys, time, urllib.request
port, lines = int(sys.argv[1]), sys.argv[2]
def count():
    return sum(1 for _ in open(lines))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < 1200:
    sys.exit(f"the open-file limit ({hard}) is below 1200: cannot hold 1100 connections")
resource.setrlimit(resource.RLIMIT_NOFILE, (4096 if hard == resource.RLIM_INFINITY else min(hard, 4096), hard))
idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(1000)]
slow = []
for _ in range(100):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    s.setblocking(False)
    slow.append(s)
# Every client is connected: a scrape now is answered (the old server queued it behind them all).
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20).read().decode()
assert "gpubind_watch_intervals_total" in body, body[:200]
# Sampling goes on while they are all connected: three more intervals arrive (waited for, not timed).
before, deadline = count(), time.monotonic() + 60
while count() - before < 3 and time.monotonic() < deadline:
    time.sleep(0.05)
assert count() - before >= 3, f"sampling stalled while the clients were connected: {count() - before} intervals in 60 s"
# The slow clients go on sending a header line every 0.5 s: each is closed once its request's
# deadline passes (the server may answer 408 first), however long it keeps sending.
open_slow, deadline = set(range(len(slow))), time.monotonic() + 120
while open_slow and time.monotonic() < deadline:
    for i in list(open_slow):
        try:
            slow[i].send(b"X-Slow: 1\r\n")
            data = slow[i].recv(4096)
            if data == b"" or data.startswith(b"HTTP/1.1 408"):
                open_slow.discard(i)
        except BlockingIOError:
            pass
        except OSError:  # reset: closed by the server
            open_slow.discard(i)
    time.sleep(0.5)
assert not open_slow, f"{len(open_slow)} slow clients still connected after 120 s"
for s in idle + slow:
    s.close()
PY

/usr/bin/python3 - "$port" "$watcher" <<'PY' && pass "35 MiB of headers: 431 after the head limit, watch's memory grew by less than 16 MiB" || fail "header flood: $(cat "$WORK/err")"
import socket, sys
port, pid = int(sys.argv[1]), sys.argv[2]
def rss_kib():
    return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
before = rss_kib()
s = socket.create_connection(("127.0.0.1", port), timeout=20)
sent, line, answer = 0, b"X-Filler-Header: some value\r\n", b""
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    chunk = line * 4096
    while sent < 35 << 20:
        s.sendall(chunk)
        sent += len(chunk)
except OSError:
    pass  # the server refused the head and closed: expected
try:
    answer = s.recv(200)
except OSError:
    pass
grown = rss_kib() - before
assert sent < 35 << 20, f"the server took all {sent} bytes of headers"
assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer
assert grown < 16 << 10, f"RSS grew by {grown} KiB"
many = socket.create_connection(("127.0.0.1", port), timeout=20)
many.sendall(b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n")
reply = many.recv(4096)
assert reply.startswith(b"HTTP/1.1 431") and b"more than 64 header lines" in reply, reply
PY

/usr/bin/python3 - "$small_port" <<'PY' && pass "a watch limited to 128 connections: 300 idle connections, a scrape still answered" || fail "connection limit: $(cat "$WORK/err-small")"
import socket, sys, urllib.request
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(300)]
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20).read().decode()
assert "gpubind_watch_intervals_total" in body, body[:200]
for s in idle:
    s.close()
PY
# Clients that pipeline requests for /metrics and never read the answers: every slot ends up
# writing an answer nobody takes, and the eviction rule skipped writers, so every new scrape was
# reset while they went on. The oldest stalled writer now makes way, and each one's kernel send
# buffer is bounded.
/usr/bin/python3 - "$small_port" <<'PY' && pass "a watch limited to 128 connections: 300 clients pipelining requests they never read, a scrape still answered" || fail "pipelining clients: $(cat "$WORK/err-small")"
import fcntl, socket, struct, sys, termios, time, urllib.request
port = int(sys.argv[1])
def unread(s):  # bytes of answers waiting in a client's socket
    try:
        return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0" * 4))[0]
    except OSError:
        return 0
request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 2000
hogs = []
for _ in range(300):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    try:
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        try:
            s.send(request)
        except (BlockingIOError, ConnectionError):
            pass
    except OSError:
        pass
    hogs.append(s)
# Until every one of the watch's 128 slots holds a client it is answering (bytes waiting unread),
# however slow a loaded machine is to get there.
deadline = time.time() + 120
while sum(1 for s in hogs if unread(s) > 0) < 128 and time.time() < deadline:
    time.sleep(0.1)
assert sum(1 for s in hogs if unread(s) > 0) >= 128, "the clients never filled the watch's slots"
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20).read().decode()
assert "gpubind_watch_intervals_total" in body, body[:200]
for s in hogs:
    s.close()
PY
alive $watcher && alive $small && pass "both watches are still running" || fail "watch died: $(cat "$WORK/err" "$WORK/err-small")"
finish
