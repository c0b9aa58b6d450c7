#!/usr/bin/env bash
# The topology cache read by root's exec (and the SPANK plugin) cannot be forged by another local
# user (issue 11): a cache directory that user created first, a symlink planted in its place, or
# a forged file in a directory of theirs is refused with one warning, and root binds from real
# discovery. A second, unprivileged user is created for the test and removed after it.
set -u
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root: runs root's exec against another user's files"
command -v useradd >/dev/null && command -v runuser >/dev/null || skip "needs useradd and runuser (passwd, util-linux)"
evil=gbevil$$
useradd -M -r -s /usr/sbin/nologin "$evil" || skip "useradd $evil failed"
SHARED=$(mktemp -d /tmp/gpubind-cachesec.XXXXXX)
chmod 1777 "$SHARED"  # a shared sticky directory, like /tmp
cleanup() { rm -rf "$WORK" "$SHARED" "$MADE_TMP0"; userdel "$evil" 2>/dev/null; }
MADE_TMP0=
trap cleanup EXIT
as_evil() { runuser -u "$evil" -- "$@"; }

# What root's exec binds a single rank to, with the given cache directory ("" = the default).
bound() {
  local dir=$1
  if [ -n "$dir" ]; then
    env -u XDG_RUNTIME_DIR GPUBIND_CACHE_DIR="$dir" LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
      "$GPUBIND" exec -- sh -c 'echo "gpu=$GPUBIND_GPU cpus=$GPUBIND_CPUS"' 2>"$WORK/err"
  else
    env -u XDG_RUNTIME_DIR -u GPUBIND_CACHE_DIR LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
      "$GPUBIND" exec -- sh -c 'echo "gpu=$GPUBIND_GPU cpus=$GPUBIND_CPUS"' 2>"$WORK/err"
  fi
}

# A genuine cache entry, then a forged copy that adds a GPU next to node 0.
genuine=$(bound "$WORK/good")
entry=$(ls "$WORK/good" | grep '^topology-.*\.json$' | head -1)
[ -n "$entry" ] || { fail "no cache entry written in $WORK/good"; finish; }
/usr/bin/python3 - "$WORK/good/$entry" "$WORK/forged.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["topology"]
node = t["numa_nodes"][0]
t["gpus"] = [{"index": 0, "vendor": "nvidia", "name": "FORGED", "pci": "0000:99:00.0", "vendor_id": "0x10de",
              "device_id": "0x2330", "class_id": "0x0302", "os_names": [], "numa": [node["os_index"]],
              "cpus": node["cpus"], "pcie_path": ["hb:0000:98"], "memory_numa": []}]
json.dump(j, open(sys.argv[2], "w"))
PY

# The forged entry is used when it sits in root's own directory: the test can see a forgery.
cp "$WORK/forged.json" "$WORK/good/$entry"
got=$(bound "$WORK/good")
case "$got" in *gpu=0000:99:00.0\ *) pass "control: a forged entry in root's own directory is read ($got)" ;;
  *) fail "control: the forged entry was not read: '$got' (genuine '$genuine')" ;; esac

# 1. A directory another user created first, holding the forged entry.
as_evil mkdir -m 0700 "$SHARED/evil-dir"
install -o "$evil" -m 0600 "$WORK/forged.json" "$SHARED/evil-dir/$entry"
got=$(bound "$SHARED/evil-dir")
[ "$got" = "$genuine" ] && grep -q "topology cache not used: .*owned by uid" "$WORK/err" \
  && pass "another user's cache directory is refused with a warning; root binds '$got'" \
  || fail "evil directory: '$got' (genuine '$genuine'): $(cat "$WORK/err")"
[ "$(ls "$SHARED/evil-dir")" = "$entry" ] && pass "nothing written into another user's directory" \
  || fail "root wrote into the evil directory: $(ls -l "$SHARED/evil-dir")"

# 2. A symlink planted where the cache directory would be, pointing at a root-owned directory.
mkdir -m 0700 "$WORK/target"
as_evil ln -s "$WORK/target" "$SHARED/link-dir"
got=$(bound "$SHARED/link-dir")
[ "$got" = "$genuine" ] && grep -q "is a symbolic link" "$WORK/err" && [ -z "$(ls "$WORK/target")" ] \
  && pass "a symlinked cache directory is refused and nothing is written through it" \
  || fail "symlink: '$got': $(cat "$WORK/err"); target holds: $(ls "$WORK/target")"

# 3. A group- or world-writable directory of root's own (a careless cache_dir) is refused too.
mkdir -m 0777 "$SHARED/open-dir"
cp "$WORK/forged.json" "$SHARED/open-dir/$entry"
got=$(bound "$SHARED/open-dir")
[ "$got" = "$genuine" ] && grep -q "writable by other users" "$WORK/err" \
  && pass "a world-writable cache directory is refused" || fail "open dir: '$got': $(cat "$WORK/err")"

# 4. The old attack: another user pre-creates /tmp/gpubind-0 with a forged entry. Root's default
#    cache is /run/gpubind, never a path under /tmp.
if [ ! -e /tmp/gpubind-0 ] && as_evil mkdir -m 0755 /tmp/gpubind-0 2>/dev/null; then
  MADE_TMP0=/tmp/gpubind-0
  install -o "$evil" -m 0644 "$WORK/forged.json" "/tmp/gpubind-0/$entry"
else
  echo "note: /tmp/gpubind-0 exists or /tmp is not writable by other users here: nothing planted there"
fi
got=$(bound "")
[ "$got" = "$genuine" ] && ! grep -q "cache not used" "$WORK/err" \
  && pass "root's default cache (not under /tmp) binds '$got' with no cache warning" || fail "default dir: '$got': $(cat "$WORK/err")"
[ -d /run/gpubind ] && [ "$(stat -c '%U %a' /run/gpubind)" = "root 700" ] \
  && pass "root's default cache directory is /run/gpubind, root's, 0700" || fail "/run/gpubind: $(ls -ld /run/gpubind 2>&1)"
finish
