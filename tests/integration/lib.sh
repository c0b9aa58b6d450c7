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
