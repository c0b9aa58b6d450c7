# Helpers for the integration scripts: failing with a message, skipping with a reason, waiting
# on a condition with a bounded timeout (never a fixed sleep), and cpulist arithmetic.
GPUBIND=${1:?usage: $0 PATH_TO_GPUBIND}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }
finish() { [ "$failures" = 0 ] && { echo "all passed"; exit 0; }; echo "$failures failure(s)"; exit 1; }

# wait_until SECONDS COMMAND...: polls every 50 ms until COMMAND succeeds; 1 on timeout.
wait_until() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -ge $end ] && return 1
    sleep 0.05
  done
}

# check_json FILE <<'PYEOF' ... PYEOF: Python checks (read from stdin) on FILE's JSON, as `j`, each
# a check(ok, what, detail) printing ok/FAIL; 1 when one failed.
check_json() {
  { cat <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
bad = 0
def check(ok, what, detail=""):
    global bad
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else ": " + str(detail)))
    bad += 0 if ok else 1
PYEOF
    cat
    echo 'sys.exit(1 if bad else 0)'
  } >"$WORK/checks.py"
  /usr/bin/python3 "$WORK/checks.py" "$1"
}

# alive PID: the process exists and is not a zombie.
alive() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
none_alive() { local p; for p in "$@"; do alive "$p" && return 1; done; return 0; }

# expand "0-2,5" -> "0 1 2 5"
expand_cpus() { echo "$1" | tr ',' '\n' | awk -F- 'NF==1{print $1} NF==2{for(i=$1;i<=$2;i++)print i}' | tr '\n' ' '; }

# disjoint LIST LIST: no CPU in both.
disjoint() {
  local a b
  for a in $(expand_cpus "$1"); do for b in $(expand_cpus "$2"); do [ "$a" = "$b" ] && return 1; done; done
  return 0
}

# plan_cpus N R [flags]: the CPUs `gpubind plan -n N` gives local rank R.
plan_cpus() { local n=$1 r=$2; shift 2; "$GPUBIND" plan -n "$n" --format env --rank "$r" "$@" | sed -n 's/^export GPUBIND_CPUS=//p'; }

# private_mounts ARGS...: re-runs this script (with ARGS) in a mount namespace of its own, where
# stand_in_gpus may lay GPU device files over /dev and /proc/driver; returns 0 inside it, 1 where
# that cannot be done (not root, no unshare), and never returns when it re-runs.
private_mounts() {
  [ -n "${GPUBIND_TEST_PRIVATE_MOUNTS:-}" ] && return 0
  [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null || return 1
  rm -rf "$WORK"
  GPUBIND_TEST_PRIVATE_MOUNTS=1 exec unshare -m --propagation private bash "$0" "$@"
}

# stand_in_gpus PCI...: NVIDIA GPUs as gpubind's probe sees them, for processes to hold open:
# /dev/nvidiaN (N the address's position) and /dev/nvidiactl on a fresh tmpfs over /dev (with
# the usual character devices made again: nothing of the real /dev is mounted in, so nothing a
# cleanup removes can reach it), and /proc/driver/nvidia/gpus/PCI/information naming each minor.
# Only inside private_mounts.
stand_in_gpus() {
  [ -n "${GPUBIND_TEST_PRIVATE_MOUNTS:-}" ] || return 1
  local d=$WORK/driver n=0 pci
  mount -t tmpfs -o mode=755 gpubind-test-dev /dev || return 1
  mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/zero c 1 5 && mknod -m 666 /dev/full c 1 7 &&
    mknod -m 666 /dev/random c 1 8 && mknod -m 666 /dev/urandom c 1 9 && mknod -m 666 /dev/tty c 5 0 || return 1
  ln -s /proc/self/fd /dev/fd && ln -s fd/0 /dev/stdin && ln -s fd/1 /dev/stdout && ln -s fd/2 /dev/stderr && mkdir /dev/shm
  for pci in "$@"; do
    mkdir -p "$d/nvidia/gpus/$pci"
    printf 'Model: \t\t NVIDIA H100 80GB HBM3\nDevice Minor: \t %d\n' $n >"$d/nvidia/gpus/$pci/information"
    : >"/dev/nvidia$n"
    n=$((n + 1))
  done
  : >/dev/nvidiactl
  mkdir -p /proc/driver 2>/dev/null
  mount --bind "$d" /proc/driver
}
