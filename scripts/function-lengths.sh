#!/usr/bin/env bash
# The longest functions under src/ (universal-ctags gives each function's first and last line):
# LINES FILE SCOPE::NAME, longest first. `scripts/function-lengths.sh 20` lists 20 (default 30).
set -eu
cd "$(dirname "$0")/.."
ctags --output-format=json --fields=+ne --c++-kinds=f -R -o - src | /usr/bin/python3 -c '
import json, sys
rows = []
for line in sys.stdin:
    t = json.loads(line)
    if "end" in t:
        scope = t.get("scope", "").split("::")[-1]
        rows.append((t["end"] - t["line"] + 1, t["path"], (scope + "::" if scope else "") + t["name"]))
rows.sort(key=lambda r: (-r[0], r[1], r[2]))
for r in rows[: int(sys.argv[1])]:
    print(*r)
' "${1:-30}"
