#!/usr/bin/env bash
# gpubind.conf on a live node: the off-switch leaves exec's command and launch's ranks unbound;
# cache_max_files bounds the topology cache (one file per cgroup/affinity key, oldest removed).
set -u
. "$(dirname "$0")/lib.sh"
probe='echo "$(grep Cpus_allowed_list /proc/self/status | cut -f2) ${GPUBIND_CPUS:-unset}"'
all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)

printf 'binding = off\n' >"$WORK/off.conf"
got=$(GPUBIND_CONFIG="$WORK/off.conf" LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "$GPUBIND" exec -- sh -c "$probe" 2>"$WORK/err")
[ "$got" = "$all unset" ] && grep -q "binding = off" "$WORK/err" && pass "binding = off: exec runs the command unbound, and says so" \
  || fail "off-switch exec: '$got' $(cat "$WORK/err")"
got=$(GPUBIND_CONFIG="$WORK/off.conf" "$GPUBIND" launch -n 2 -q -- sh -c "$probe" 2>/dev/null | sort -u)
[ "$got" = "$all unset" ] && pass "binding = off: launch starts its ranks unbound" || fail "off-switch launch: '$got'"

if [ "$(nproc)" -ge 2 ]; then
  printf 'cache_max_files = 2\ncache_dir = %s\n' "$WORK/cache" >"$WORK/small.conf"
  for cpus in 0 1 0-1; do
    GPUBIND_CONFIG="$WORK/small.conf" LOCAL_RANK=0 taskset -c "$cpus" "$GPUBIND" exec -q -- true || fail "exec under taskset $cpus"
    sleep 0.05  # distinct modification times
  done
  n=$(ls "$WORK/cache" | grep -c '^topology-.*\.json$')
  newest=$(ls -t "$WORK/cache" | head -1)
  [ "$n" = 2 ] && grep -q '; cpus 0-1;' "$WORK/cache/$newest" && pass "cache_max_files = 2: three keys, two files kept (the newest)" \
    || fail "cache: $n files: $(ls -l "$WORK/cache")"
  # The cache_dir from the file is used, and GPUBIND_CACHE_DIR still wins over it.
  GPUBIND_CACHE_DIR="$WORK/env-cache" GPUBIND_CONFIG="$WORK/small.conf" LOCAL_RANK=0 "$GPUBIND" exec -q -- true
  [ -n "$(ls "$WORK/env-cache" 2>/dev/null)" ] && pass "GPUBIND_CACHE_DIR wins over cache_dir" || fail "env cache dir not used"
else
  echo "note: one CPU: the cache bound needs two affinity keys; not run"
fi

# A cache entry of the wrong shape (issue 13): valid JSON whose cache_key is a number made exec
# fail with "internal error" and exit 1. Each is a miss now: discovery, the command runs.
mkdir -p "$WORK/odd"
GPUBIND_CACHE_DIR="$WORK/odd" LOCAL_RANK=0 "$GPUBIND" exec -q -- true
entry=$(ls "$WORK/odd"/topology-*.json)
for bad in '{"cache_key": 5}' '[1, 2]' '"text"' '{"cache_key": null, "topology": 3}' '{"cache_ke'; do
  printf '%s' "$bad" >"$entry"
  out=$(GPUBIND_CACHE_DIR="$WORK/odd" LOCAL_RANK=0 "$GPUBIND" exec -q -- echo ran 2>"$WORK/err")
  rc=$?
  [ $rc = 0 ] && [ "$out" = ran ] && [ ! -s "$WORK/err" ] && pass "cache entry $bad: a miss, the command runs" \
    || fail "cache entry $bad: exit $rc, $(cat "$WORK/err")"
done
finish
