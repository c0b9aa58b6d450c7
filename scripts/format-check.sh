#!/usr/bin/env bash
# Fails when a C++ line changed since BASE is not laid out as .clang-format says: what
# `git clang-format --diff BASE` would change, printed as a diff. Lines nobody changed since
# .clang-format was added keep their layout (the default BASE is the commit that added it).
#   scripts/format-check.sh [BASE]        (from anywhere in the repository)
#   exit 0 laid out, 1 a changed line is not (the diff says which), 77 cannot check here
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
command -v git-clang-format >/dev/null || { echo "format-check: skipped: git-clang-format not found (Debian package clang-format)"; exit 77; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "format-check: skipped: not a git checkout"; exit 77; }
base=${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -1)}
[ -n "$base" ] || { echo "format-check: skipped: no commit adds .clang-format (a shallow clone?)"; exit 77; }
git cat-file -e "$base^{commit}" 2>/dev/null || { echo "format-check: skipped: $base is not in this clone's history"; exit 77; }
out=$(git clang-format --binary "$(command -v clang-format)" --diff --extensions cpp,hpp,h,c,cc "$base" -- src tests fuzz bench examples 2>&1)
case "$out" in
  diff*) echo "$out"; echo "format-check: the lines above, changed since ${base:0:12}, are not laid out as .clang-format says: git clang-format ${base:0:12}"; exit 1 ;;
esac
echo "format-check: every C++ line changed since ${base:0:12} is laid out as .clang-format says"
