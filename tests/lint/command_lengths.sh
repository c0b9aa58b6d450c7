#!/usr/bin/env bash
# A command is a thin shell over a library call (docs/ARCHITECTURE.md): every cmd_* function in
# src/cli is at most LIMIT lines (flags in, one library call, render, status). Lengths come from
# universal-ctags (scripts/function-lengths.sh); without it the test skips with the reason.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
limit=${1:-60}
command -v ctags >/dev/null && ctags --version 2>/dev/null | grep -q "Universal Ctags" \
  || { echo "SKIP: universal-ctags is not installed (Debian package universal-ctags; scripts/install-deps.sh installs it)"; exit 77; }
rows=$("$root/scripts/function-lengths.sh" 100000 | awk '$2 ~ /^src\/cli\/cmd_/ && $3 ~ /::cmd_/')
[ -n "$rows" ] || { echo "FAIL: no cmd_* function found in src/cli (ctags output changed?)"; exit 1; }
long=$(awk -v limit="$limit" '$1 > limit' <<<"$rows")
echo "$rows" | sed 's/^/  /'
if [ -n "$long" ]; then
  echo "FAIL: command bodies over $limit lines (move the flow into a library function):"
  echo "$long"
  exit 1
fi
echo "ok: $(wc -l <<<"$rows") commands, each at most $limit lines"
