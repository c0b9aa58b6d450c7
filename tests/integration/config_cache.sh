#!/usr/bin/env bash
# gpubind.conf on a live node: the off-switch leaves exec's command and launch's ranks unbound;
# cache_max_files bounds the topology cache (one file per key, oldest removed); pinned ranks share one.
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

# Ranks a launcher pinned to different CPUs share one cache entry (issue 34 item 1): the second
# rank reads what the first wrote, instead of discovering the machine again.
if [ "$(nproc)" -ge 2 ]; then
  for cpus in 0 1; do
    GPUBIND_CACHE_DIR="$WORK/pinned" LOCAL_RANK=$cpus LOCAL_WORLD_SIZE=2 taskset -c "$cpus" "$GPUBIND" exec -q -- true \
      || fail "exec under taskset $cpus"
    [ $cpus = 0 ] && first=$(stat -c %i "$WORK"/pinned/topology-*.json 2>/dev/null)
  done
  n=$(ls "$WORK/pinned" | grep -c '^topology-.*\.json$')
  [ "$n" = 1 ] && [ "$(stat -c %i "$WORK"/pinned/topology-*.json)" = "$first" ] \
    && pass "two ranks pinned to CPUs 0 and 1: one cache entry, written by the first, read by the second" \
    || fail "pinned ranks: $n cache files: $(ls -li "$WORK/pinned")"
else
  echo "note: one CPU: pinned ranks on different CPUs cannot be shown; not run"
fi

# cache_max_files: three keys (three boot ids, each bind-mounted over the kernel's in a mount
# namespace of its own), two files kept, the newest.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  printf 'cache_max_files = 2\ncache_dir = %s\n' "$WORK/cache" >"$WORK/small.conf"
  for boot in 11111111-aaaa 22222222-bbbb 33333333-cccc; do
    echo "$boot" >"$WORK/boot_id"
    unshare -m sh -c 'mount --bind "$1" /proc/sys/kernel/random/boot_id && GPUBIND_CONFIG="$2" LOCAL_RANK=0 exec "$3" exec -q -- true' \
      sh "$WORK/boot_id" "$WORK/small.conf" "$GPUBIND" || fail "exec with boot id $boot"
    sleep 0.05  # distinct modification times
  done
  n=$(ls "$WORK/cache" | grep -c '^topology-.*\.json$')
  newest=$(ls -t "$WORK/cache" | head -1)
  [ "$n" = 2 ] && grep -q '; boot 33333333-cccc;' "$WORK/cache/$newest" && pass "cache_max_files = 2: three keys, two files kept (the newest)" \
    || fail "cache: $n files: $(ls -l "$WORK/cache")"
  # The cache_dir from the file is used, and GPUBIND_CACHE_DIR still wins over it.
  GPUBIND_CACHE_DIR="$WORK/env-cache" GPUBIND_CONFIG="$WORK/small.conf" LOCAL_RANK=0 "$GPUBIND" exec -q -- true
  [ -n "$(ls "$WORK/env-cache" 2>/dev/null)" ] && pass "GPUBIND_CACHE_DIR wins over cache_dir" || fail "env cache dir not used"
else
  echo "note: three cache keys need root and a mount namespace (a boot id of each); the cache bound is not run"
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
