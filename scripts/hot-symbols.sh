#!/usr/bin/env bash
# Writes the functions of the gpubind binary that `gpubind exec` runs on a cached topology, one
# mangled name per line, sorted: what valgrind's callgrind saw in the runs below. The link lays
# them out together at the start of .text (src/CMakeLists.txt, lld's --symbol-ordering-file), so
# a rank's start faults in a few pages of code instead of one 64 KiB window after another across a
# 4 MB .text. Rewrite the list after changing exec's path; tests/integration/hot_symbols.sh says
# when it no longer covers it.
#   scripts/hot-symbols.sh [GPUBIND] [OUTPUT]    (default: build/src/gpubind, src/cli/exec_hot_symbols.txt)
set -euo pipefail
gpubind=$(realpath "${1:-build/src/gpubind}")
out=${2:-$(dirname "$0")/../src/cli/exec_hot_symbols.txt}
command -v valgrind >/dev/null || { echo "$0: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUBIND_CACHE_DIR=$tmp/cache LOCAL_RANK=0
"$gpubind" exec -q -- true  # fills the cache: the runs below are the cached path
# The command does not exist: gpubind does everything up to execve, then exits and callgrind
# writes its profile (an execve that succeeds leaves none).
n=0
for options in "" "-q" "--report-bindings --local-rank 0 --local-size 1" "--verbose"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$n" "$gpubind" exec $options -- "$tmp/no-such-command" \
    >/dev/null 2>&1 || true
  [ -s "$tmp/cg.$n" ] || { echo "$0: callgrind wrote no profile for 'exec $options'" >&2; exit 1; }
done
# callgrind_annotate lists every function that ran as "COST (PCT)  FILE:NAME [OBJECT]".
for f in "$tmp"/cg.*; do
  callgrind_annotate --threshold=100 "$f" 2>/dev/null | grep -F " [$gpubind]" | sed -E 's/^ *[0-9,]+ +\([ 0-9.]+%\) +//; s/ \[[^]]*\]$//; s/^.*://'
done | sed -E "s/'[0-9]+\$//" | grep -vE '^(0x[0-9a-f]+|\(below main\))$' | sort -u >"$tmp/ran"
[ -s "$tmp/ran" ] || { echo "$0: no function of $gpubind in the profiles" >&2; exit 1; }
# glibc picks each string function's variant for the CPU it runs on (an ifunc), and valgrind's
# CPU is not this one (no AVX-512): every variant of each string function that ran is listed,
# memcpy's with memmove's (one implementation, two names).
nm --defined-only "$gpubind" | awk '{print $3}' | sort -u >"$tmp/all"
sed -nE 's/^(__(mem|str|wcs|wmem|rawmem|stp)[a-z]*_)(sse|avx|evex).*/\1/p' "$tmp/ran" | sed 's/^__memcpy_$/&\n__memmove_/' | sort -u |
  while read -r family; do grep -E "^${family}(sse|avx|evex)" "$tmp/all" || true; done >"$tmp/variants"
sort -u "$tmp/ran" "$tmp/variants" >"$tmp/list"
mv "$tmp/list" "$out"
echo "$(wc -l <"$out") functions -> $out"
