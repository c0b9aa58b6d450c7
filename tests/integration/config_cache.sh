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
# ...and says so once, also on a cache miss (where the static front hands launch to gpubind-full).
GPUBIND_CACHE_DIR="$WORK/off-cache" GPUBIND_CONFIG="$WORK/off.conf" "$GPUBIND" launch -n 2 -- true 2>"$WORK/err" >/dev/null
[ "$(grep -c "binding = off" "$WORK/err")" = 1 ] && [ -n "$(ls "$WORK/off-cache")" ] \
  && pass "binding = off: launch says so once, on a cache miss" || fail "off-switch launch's note: $(cat "$WORK/err")"

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

# Jobs in per-job cgroups (Slurm task/cgroup, a container each) share one cache entry too, and
# each start takes the allowed CPUs of its own cgroup's cpuset (issue 34 item 1): a cgroup each
# for CPU 0 and CPU 1, the second start reads the entry the first wrote, and binds within CPU 1.
cpuset_parent=""
if [ "$(nproc)" -ge 2 ] && [ "$(id -u)" = 0 ]; then
  if [ -w /sys/fs/cgroup/cpuset/cgroup.procs ]; then cpuset_parent=/sys/fs/cgroup/cpuset
  elif grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then cpuset_parent=/sys/fs/cgroup; fi
fi
if [ -n "$cpuset_parent" ]; then
  for cpu in 0 1; do
    cg="$cpuset_parent/gpubind-test-$$-$cpu"
    mkdir "$cg" && echo $cpu >"$cg/cpuset.cpus" && { [ ! -e "$cg/cpuset.mems" ] || cat "$cpuset_parent/cpuset.mems" "$cpuset_parent/cpuset.mems.effective" 2>/dev/null | head -1 >"$cg/cpuset.mems"; } \
      || fail "cgroup $cg"
    got=$(sh -c 'echo $$ >"$1/cgroup.procs" && exec env GPUBIND_CACHE_DIR="$2" LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "$3" exec -q -- sh -c "$4"' \
      sh "$cg" "$WORK/cgroups" "$GPUBIND" "$probe")
    [ "$got" = "$cpu $cpu" ] && pass "exec in a cgroup whose cpuset is CPU $cpu: bound to CPU $cpu" || fail "exec in cgroup of CPU $cpu: '$got'"
    [ $cpu = 0 ] && first=$(stat -c %i "$WORK"/cgroups/topology-*.json 2>/dev/null)
    rmdir "$cg"
  done
  n=$(ls "$WORK/cgroups" | grep -c '^topology-.*\.json$')
  [ "$n" = 1 ] && [ "$(stat -c %i "$WORK"/cgroups/topology-*.json)" = "$first" ] && ! grep -q '; cgroup ' "$WORK"/cgroups/topology-*.json \
    && pass "two per-job cgroups: one cache entry, keyed on the machine, written by the first, read by the second" \
    || fail "per-job cgroups: $n cache files: $(ls -li "$WORK/cgroups"; head -c 300 "$WORK"/cgroups/topology-*.json)"
else
  echo "note: per-job cgroups need root, 2 CPUs and a writable cpuset hierarchy (v1, or v2 with cpuset delegated); not run"
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

# Every command that discovers this machine goes through the cache gpubind.conf names (issue 53
# item 4): before, cache_dir and cache_max_files reached exec, launch and the SPANK plugin only, and
# check, watch, doctor, rebind and bench wrote under the default place even with cache_dir = off.
# Each command with cache_dir = a directory of its own writes its entry there; with cache_dir = off
# it leaves the default place empty: root's /run/gpubind, an empty tmpfs in a mount namespace of
# the test's own (other tests write the real one), or another user's $XDG_RUNTIME_DIR/gpubind.
printf 'cache_dir = off\n' >"$WORK/off-cache.conf"
mkdir -p "$WORK/xdg" && chmod 700 "$WORK/xdg"
run_off() {  # CMD...: with cache_dir = off; prints what the default place holds afterwards
  if [ "$(id -u)" = 0 ]; then
    mkdir -p /run/gpubind
    unshare -m sh -c 'mount -t tmpfs -o mode=0700 none /run/gpubind && shift && GPUBIND_CONFIG="$0" "$@" >/dev/null 2>&1; ls -A /run/gpubind' \
      "$WORK/off-cache.conf" x "$@"
  else
    XDG_RUNTIME_DIR="$WORK/xdg" GPUBIND_CONFIG="$WORK/off-cache.conf" "$@" >/dev/null 2>&1
    ls -A "$WORK/xdg/gpubind" 2>/dev/null
  fi
}
i=0
while IFS='|' read -r name cmd; do
  i=$((i + 1))
  printf 'cache_dir = %s\n' "$WORK/cc-$i" >"$WORK/cc-$i.conf"
  # shellcheck disable=SC2086
  (unset GPUBIND_CACHE_DIR; GPUBIND_CONFIG="$WORK/cc-$i.conf" "$GPUBIND" $cmd >"$WORK/cc-out" 2>&1)
  n=$(ls "$WORK/cc-$i"/topology-*.json 2>/dev/null | wc -l)
  [ "$n" = 1 ] && pass "$name: its topology cache entry in gpubind.conf's cache_dir" \
    || fail "$name: $n entries in cache_dir; it said: $(head -3 "$WORK/cc-out")"
  # shellcheck disable=SC2086
  left=$(unset GPUBIND_CACHE_DIR; run_off "$GPUBIND" $cmd)
  [ -z "$left" ] && pass "$name: cache_dir = off writes no entry in the default place" || fail "$name: cache_dir = off, but the default place holds: $left"
done <<EOF2
check|check --all-gpu-procs
watch|watch --once --all-gpu-procs --interval 0.2
doctor|doctor --quiet
rebind|rebind --dry-run --all-gpu-procs
bench|bench -n 1 --steps 20 --strategies closest --quiet
EOF2

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
