#!/usr/bin/env bash
# Runs one case of tests/cli/cases.txt against the built binary and compares its exit status and
# output (stdout, then stderr) with tests/golden/NAME.out. UPDATE_GOLDEN=1 rewrites the golden.
set -u
GPUBIND=$1
name=$2
here=$(cd "$(dirname "$0")" && pwd)
line=$(grep -E "^${name} " "$here/cases.txt") || { echo "no case named $name"; exit 1; }
read -r _ want_rc cmd <<<"$line"
TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
export GPUBIND TMPDIR
eval "$cmd" >"$TMPDIR/stdout" 2>"$TMPDIR/stderr"
rc=$?
{
  cat "$TMPDIR/stdout"
  if [ -s "$TMPDIR/stderr" ]; then
    echo "--- stderr ---"
    cat "$TMPDIR/stderr"
  fi
} | sed -e "s#$TMPDIR#\$TMPDIR#g" >"$TMPDIR/actual"
golden="$here/../golden/$name.out"
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$TMPDIR/actual" "$golden"
  echo "updated $golden"
fi
status=0
if [ "$rc" != "$want_rc" ]; then
  echo "FAIL $name: exit status $rc, expected $want_rc"
  status=1
fi
if [ ! -f "$golden" ]; then
  echo "FAIL $name: no golden file $golden (run with UPDATE_GOLDEN=1 and review it)"
  status=1
elif ! diff -u "$golden" "$TMPDIR/actual"; then
  echo "FAIL $name: output differs from $golden"
  status=1
fi
[ $status = 0 ] && echo "ok $name"
exit $status
