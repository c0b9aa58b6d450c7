#!/usr/bin/env bash
# The proof that lint.format bites: in a throw-away repository holding this .clang-format and
# scripts/format-check.sh, a committed file with a line changed out of layout must fail the check
# (naming the line), the same change laid out must pass, and an old line out of layout that nobody
# changed must not count.
set -u
command -v git-clang-format >/dev/null || { echo "skipped: git-clang-format not found (Debian package clang-format)"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" && git init -q && mkdir -p scripts src
cp "$here/.clang-format" . && cp "$here/scripts/format-check.sh" scripts/
git() { command git -c user.email=lint@gpubind -c user.name=lint "$@"; }
git add . && git commit -qm format
printf 'int   old( int a ){return a ;}\n' > src/a.cpp  # out of layout before any check
git add . && git commit -qm old
base=$(git rev-parse HEAD)
printf 'int   old( int a ){return a ;}\nint   changed( int b ){return b ;}\n' > src/a.cpp
out=$(scripts/format-check.sh "$base"); rc=$?
[ $rc = 1 ] && grep -q '^-int   changed' <<<"$out" || { echo "FAIL: a changed line out of layout passed (exit $rc): $out"; exit 1; }
! grep -q '^-int   old' <<<"$out" || { echo "FAIL: an unchanged line was judged: $out"; exit 1; }
printf 'int   old( int a ){return a ;}\nint changed(int b) { return b; }\n' > src/a.cpp
out=$(scripts/format-check.sh "$base"); rc=$?
[ $rc = 0 ] || { echo "FAIL: the same change laid out failed (exit $rc): $out"; exit 1; }
echo "ok: a changed line out of layout fails, laid out passes, an unchanged one is not judged"
