#!/usr/bin/env bash
# exec (and launch) with an admin's topology file on a live node: a file that describes this
# machine (its own `topo --json`, hwloc's `lstopo --of xml`, a copy with GPU locality filled in)
# is bound with, from --topology and from GPUBIND_TOPOLOGY; a file of another machine is refused
# with one line saying what differs, exit 125, nothing started.
set -u
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || skip "no /usr/bin/python3 to edit the JSON copy"
export GPUBIND_CACHE_DIR=off
probe='echo "$(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset} ${GPUBIND_GPU:-unset}"'

"$GPUBIND" topo --json >"$WORK/live.json" || { fail "topo --json"; finish; }
want=$(LOCAL_RANK=0 "$GPUBIND" exec -q -- sh -c "$probe")

# 1. This machine's own JSON, by flag and by environment: the same binding as live.
got=$(LOCAL_RANK=0 "$GPUBIND" exec -q --topology "$WORK/live.json" -- sh -c "$probe" 2>"$WORK/err")
[ $? = 0 ] && [ "$got" = "$want" ] && pass "exec --topology <this machine's JSON> binds: $got" \
  || fail "exec with this machine's JSON: '$got' (live: '$want') $(cat "$WORK/err")"
got=$(LOCAL_RANK=0 GPUBIND_TOPOLOGY="$WORK/live.json" "$GPUBIND" exec -q -- sh -c "$probe" 2>"$WORK/err")
[ $? = 0 ] && [ "$got" = "$want" ] && pass "GPUBIND_TOPOLOGY=<this machine> exec binds" \
  || fail "GPUBIND_TOPOLOGY exec: '$got' $(cat "$WORK/err")"

# 2. hwloc's own XML of this machine.
if command -v lstopo-no-graphics >/dev/null; then
  lstopo-no-graphics --of xml >"$WORK/live.xml"
  got=$(LOCAL_RANK=0 "$GPUBIND" exec -q --topology "$WORK/live.xml" -- sh -c "$probe" 2>"$WORK/err")
  [ $? = 0 ] && [ "$got" = "$want" ] && pass "exec --topology <lstopo XML of this machine> binds" \
    || fail "lstopo XML: '$got' $(cat "$WORK/err")"
else
  echo "note: lstopo-no-graphics not found; hwloc XML case not run"
fi

# 3. An admin-corrected copy: a GPU the VM's firmware hides, placed on node 0. The plan follows it.
$PY - "$WORK/live.json" "$WORK/admin.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
node = t["numa_nodes"][0]
t["gpus"] = [{"index": 0, "vendor": "nvidia", "name": "admin GPU", "uuid": "", "pci": "0000:e1:00.0",
              "vendor_id": "0x10de", "device_id": "0x2330", "class_id": "0x0302", "os_names": [],
              "numa": [node["os_index"]], "cpus": node["cpus"], "pcie_path": ["hb:0000:e0"], "memory_numa": []}]
json.dump(t, open(sys.argv[2], "w"))
PYEOF
got=$(LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "$GPUBIND" exec -q --topology "$WORK/admin.json" -- sh -c "$probe" 2>"$WORK/err")
[ $? = 0 ] && [ "$(echo "$got" | awk '{print $3}')" = "0000:e1:00.0" ] && pass "admin-corrected topology: rank bound to its GPU 0000:e1:00.0" \
  || fail "admin copy: '$got' $(cat "$WORK/err")"
out=$(GPUBIND_TOPOLOGY="$WORK/admin.json" "$GPUBIND" launch -n 1 -q -- sh -c "$probe" 2>/dev/null)
[ "$(echo "$out" | awk '{print $3}')" = "0000:e1:00.0" ] && pass "launch follows GPUBIND_TOPOLOGY of this machine" \
  || fail "launch with the admin copy: '$out'"

# 4. Another machine: refused, one line naming the difference, exit 125, the command not run.
rm -f "$WORK/ran"
LOCAL_RANK=0 GPUBIND_TOPOLOGY=example:dgx-h100 "$GPUBIND" exec -- touch "$WORK/ran" >"$WORK/out" 2>&1
rc=$?
[ $rc = 125 ] && [ ! -e "$WORK/ran" ] && [ "$(wc -l <"$WORK/out")" = 1 ] \
  && grep -q "^gpubind: error: GPUBIND_TOPOLOGY=example:dgx-h100: does not describe this machine (PUs 0-223, this machine has" "$WORK/out" \
  && pass "another machine's topology refused: $(cat "$WORK/out")" || fail "mismatch (rc $rc): $(cat "$WORK/out")"
$PY - "$WORK/live.json" "$WORK/other-nodes.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
t["numa_nodes"][0]["os_index"] = 7
t["numa_nodes"][0]["cpus"] = t["cpus"]
for x in t["gpus"] + t["nics"]:
    x["numa"] = [7] if x.get("numa") else x.get("numa")
t["distances"] = []
json.dump(t, open(sys.argv[2], "w"))
PYEOF
LOCAL_RANK=0 "$GPUBIND" exec --topology "$WORK/other-nodes.json" -- true >"$WORK/out" 2>&1
rc=$?
[ $rc = 125 ] && grep -q "NUMA nodes with CPUs 7:" "$WORK/out" && pass "different NUMA nodes refused: $(cat "$WORK/out")" \
  || fail "NUMA mismatch (rc $rc): $(cat "$WORK/out")"
# ... while --dry-run still previews any machine.
LOCAL_RANK=0 "$GPUBIND" exec --topology example:dgx-h100 --dry-run -q -- true >/dev/null && pass "--dry-run previews another machine" \
  || fail "dry run refused"

# Live discovery ignores hwloc's own environment overrides (issue 12): HWLOC_XMLFILE would make
# hwloc describe a file's machine as this one, and the cache would keep it until reboot.
got=$(HWLOC_XMLFILE="$(dirname "$0")/../../data/examples/dgx-h100.json" HWLOC_SYNTHETIC="pack:8 core:4 pu:2" \
  GPUBIND_CACHE_DIR=off "$GPUBIND" topo --format json 2>"$WORK/err" | $PY -c 'import json,sys; t=json.load(sys.stdin); print(t["origin"], t["cpus"])')
[ "$got" = "live $(cat /sys/devices/system/cpu/online)" ] && grep -q "HWLOC_XMLFILE, HWLOC_SYNTHETIC set in the environment: ignored" "$WORK/err" \
  && pass "HWLOC_XMLFILE/HWLOC_SYNTHETIC ignored for live discovery, with a warning ($got)" \
  || fail "hwloc env overrides: '$got': $(cat "$WORK/err")"

# The fast path (issues 11 and 34). Where the build has the static front (src/cli/front.cpp), the
# gpubind binary is static (no dynamic loader at a rank's start) and gpubind-full beside it is the
# dynamic binary every other command runs; otherwise gpubind is the dynamic binary. The dynamic
# binary does not link libhwloc (it loads gpubind-hwloc.so to discover) and links only libc.
full=$(dirname "$GPUBIND")/gpubind-full
dynamic=$GPUBIND
if [ -x "$full" ]; then
  dynamic=$full
  if readelf -lW "$GPUBIND" | grep -q INTERP; then fail "the gpubind front is dynamically linked: $(readelf -lW "$GPUBIND" | grep -A1 INTERP | tr -s ' ')"
  else pass "the gpubind front is linked statically (no program interpreter)"; fi
fi
if ldd "$dynamic" | grep -q libhwloc; then fail "$(basename "$dynamic") links libhwloc: $(ldd "$dynamic" | grep hwloc)"
else pass "$(basename "$dynamic") does not link libhwloc (it loads gpubind-hwloc.so to discover)"; fi
# Every shared library is time at every rank's start: libc (and the loader) only.
others=$(ldd "$dynamic" | grep -vE 'linux-vdso|ld-linux|libc\.so' || true)
[ -z "$others" ] && pass "$(basename "$dynamic") links only libc" || fail "$(basename "$dynamic") links more than libc: $others"
# Nor does either build the C++ streams and locale before main (std::ios_base::Init, which any
# file including <iostream> runs: CLI11's headers do; src/cli/args.cpp keeps it out).
for b in "$GPUBIND" "$dynamic"; do
  if ! command -v nm >/dev/null; then echo "skip: no ios_base::Init check: nm (binutils) not found"; break
  elif nm "$b" | grep -q ' T _ZNSt8ios_base4InitC[12]Ev'; then fail "$(basename "$b") constructs std::ios_base::Init at start (a file includes <iostream>)"
  else pass "$(basename "$b") has no std::ios_base::Init (no <iostream> start-up)"; fi
done
# The binary alone, without its modules (and without gpubind-full): exec on a cached topology
# binds; what needs a module or the full binary says which is missing, in one line.
mkdir -p "$WORK/alone"
cp "$GPUBIND" "$WORK/alone/gpubind"
GPUBIND_CACHE_DIR="$WORK/fast-cache" LOCAL_RANK=0 "$GPUBIND" exec -q -- true  # the real binary fills the cache
got=$(GPUBIND_CACHE_DIR="$WORK/fast-cache" LOCAL_RANK=0 "$WORK/alone/gpubind" exec -q -- sh -c 'echo "$GPUBIND_CPUS"' 2>"$WORK/err")
[ -n "$got" ] && pass "exec on a cached topology without the hwloc module or gpubind-full binds CPUs $got"   || fail "cached exec without module: $(cat "$WORK/err")"
if [ -e /usr/lib/gpubind/gpubind-hwloc.so ] || ls /usr/lib/*/gpubind/gpubind-hwloc.so /usr/local/lib/gpubind/gpubind-hwloc.so >/dev/null 2>&1; then
  echo "note: gpubind is installed system-wide: the missing-module and missing-binary errors are not checked"
else
  GPUBIND_CACHE_DIR=off LOCAL_RANK=0 "$WORK/alone/gpubind" exec -q -- true 2>"$WORK/err"
  rc=$?
  if [ -x "$full" ]; then want="^gpubind: error: gpubind-full: not installed (looked for $WORK/alone/gpubind-full, .*); the gpubind front binary hands it exec when it needs gpubind-hwloc.so$"
  else want="^gpubind: error: hwloc discovery: the module gpubind-hwloc.so is not installed"; fi
  [ $rc = 125 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "$want" "$WORK/err" \
    && pass "exec that must discover, alone: one line, exit 125: $(cat "$WORK/err")" || fail "missing module (rc $rc): $(cat "$WORK/err")"
  if [ -x "$full" ]; then
    "$WORK/alone/gpubind" topo >/dev/null 2>"$WORK/err"
    rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "^gpubind: error: gpubind-full: not installed (.*); the gpubind front binary hands it every command but exec and launch$" "$WORK/err" \
      && pass "another command without gpubind-full: one line, exit 1" || fail "topo without gpubind-full (rc $rc): $(cat "$WORK/err")"
  fi
fi
# With gpubind-full beside it, a cache miss is the full binary's: the same binding, the cache filled.
if [ -x "$full" ]; then
  cp "$full" "$WORK/alone/"
  cp "$(dirname "$GPUBIND")/gpubind-hwloc.so" "$WORK/alone/"
  got=$(GPUBIND_CACHE_DIR="$WORK/miss-cache" LOCAL_RANK=0 "$WORK/alone/gpubind" exec -q -- sh -c 'echo "$GPUBIND_CPUS"' 2>"$WORK/err")
  want=$(GPUBIND_CACHE_DIR="$WORK/fast-cache" LOCAL_RANK=0 "$WORK/alone/gpubind" exec -q -- sh -c 'echo "$GPUBIND_CPUS"')
  [ -n "$got" ] && [ "$got" = "$want" ] && [ -n "$(ls "$WORK/miss-cache")" ] && [ ! -s "$WORK/err" ] \
    && pass "a cache miss runs in gpubind-full: CPUs $got, the cache filled, nothing printed twice" \
    || fail "cache miss through the front: '$got' vs '$want', cache: $(ls "$WORK/miss-cache" 2>&1) err: $(cat "$WORK/err")"
fi
finish
