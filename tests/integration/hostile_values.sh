#!/usr/bin/env bash
# Values another user controls reach root's outputs escaped, one rule per output kind (issue 29
# item 4; util/strings.hpp): a process whose RANK holds a newline, a forged row and ESC, whose
# LOCAL_RANK holds control characters and an OSC title sequence, and whose SLURM_JOB_ID is not
# UTF-8. watch's text table keeps one row per process with no control byte, its Prometheus
# textfile is valid UTF-8 that promtool accepts (Prometheus refuses a whole scrape otherwise), its
# JSON lines parse, check's SVG is XML, and an error line echoing GPUBIND_TOPOLOGY is one line
# without ESC.
set -u
. "$(dirname "$0")/lib.sh"
RANK=$'3\n9999  FORGED  row \x1b[31m' LOCAL_RANK=$'1\x01\x1b]0;pwned\x07\xc2\x9b2J' SLURM_JOB_ID=$'\xff\xfe42' sleep 600 &
target=$!
trap 'kill $target 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
wait_until 10 grep -q FORGED "/proc/$target/environ" || { fail "the target did not start"; finish; }

# control bytes other than newline (and the C1 CSI, as UTF-8) in a file
controls() { /usr/bin/python3 -c 'import re, sys; d = open(sys.argv[1], "rb").read(); sys.exit(0 if re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", d) else 1)' "$1"; }

"$GPUBIND" watch --pid $target --interval 0.3 --duration 0.6 --no-tty --textfile "$WORK/m.prom" >"$WORK/table" 2>"$WORK/err"
! controls "$WORK/table" && pass "watch's table holds no control byte" || fail "control bytes in watch's table: $(cat -A "$WORK/table" | head -5)"
# As many rows for it as tables printed (each interval's and the summary's; a loaded machine may
# take fewer intervals in the 0.6 s, so the count is read, not assumed).
rows=$(grep -c "^$target " "$WORK/table")
tables=$(grep -cE "^(interval [0-9]+ |summary: )" "$WORK/table")
[ "$rows" -ge 2 ] && [ "$rows" = "$tables" ] && ! grep -q "^9999" "$WORK/table" && grep "^$target " "$WORK/table" | head -1 | grep -q 'FORGED' \
  && pass "one row per interval and summary for the process, the forged row inside its rank cell" || fail "rows: $(cat "$WORK/table")"
/usr/bin/python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$WORK/m.prom" && grep -q 'slurm_job_id="' "$WORK/m.prom" \
  && pass "the textfile is valid UTF-8" || fail "the textfile is not UTF-8: $(grep -a slurm_job_id= "$WORK/m.prom" | head -2 | cat -A)"
if command -v promtool >/dev/null; then
  promtool check metrics <"$WORK/m.prom" >"$WORK/promtool" 2>&1 && pass "promtool check metrics accepts it" || fail "promtool: $(cat "$WORK/promtool")"
else
  echo "note: promtool is not installed (Debian's prometheus); its check skipped"
fi

"$GPUBIND" watch --pid $target --interval 0.3 --duration 0.6 --json >"$WORK/lines" 2>"$WORK/err"
/usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8").splitlines()
ranks = [r for l in lines for r in json.loads(l)["ranks"]]
assert ranks and all("FORGED" in r["rank"] for r in ranks), ranks' "$WORK/lines" \
  && pass "watch's JSON lines are UTF-8 and parse, the rank kept as a string" || fail "JSON: $(head -c 400 "$WORK/lines")"

"$GPUBIND" check --pid $target --format svg >"$WORK/c.svg" 2>"$WORK/err"
/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$WORK/c.svg" 2>"$WORK/xml" && ! controls "$WORK/c.svg" \
  && pass "check's SVG is XML without control characters" || fail "SVG: $(cat "$WORK/xml")"

GPUBIND_TOPOLOGY=$'/no\x1b[2J\nsuch' "$GPUBIND" topo >/dev/null 2>"$WORK/err"
[ "$(wc -l <"$WORK/err")" = 1 ] && ! controls "$WORK/err" && grep -q '^gpubind: error: /no\\x1b\[2J\\nsuch' "$WORK/err" \
  && pass "an error echoing GPUBIND_TOPOLOGY is one line, its ESC and newline written out" || fail "error line: $(cat -A "$WORK/err")"
finish
