#!/usr/bin/env bash
# The functions a cached `gpubind exec` runs lie together at the start of the binary's code
# (lld's --symbol-ordering-file, src/cli/exec_hot_symbols.txt), so that a rank's start faults in a
# few pages of code rather than windows across all of it. Checks that the committed list still
# names what exec runs (callgrind, as scripts/hot-symbols.sh lists it) and that the link followed it.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v valgrind >/dev/null || skip "valgrind not found (scripts/install-deps.sh installs it)"
command -v nm >/dev/null || skip "nm (binutils) not found"

"$root/scripts/hot-symbols.sh" "$GPUBIND" "$WORK/ran.txt" >/dev/null 2>"$WORK/err" || { fail "hot-symbols.sh: $(cat "$WORK/err")"; finish; }
listed=$root/src/cli/exec_hot_symbols.txt
ran=$(wc -l <"$WORK/ran.txt")
missing=$(comm -23 "$WORK/ran.txt" <(sort -u "$listed") | wc -l)
# A few names come and go with any change of exec's code; a tenth is a stale list.
[ $((missing * 10)) -le "$ran" ] && pass "$((ran - missing)) of the $ran functions exec runs are in the hot list" \
  || fail "$missing of the $ran functions exec runs are not in src/cli/exec_hot_symbols.txt: run scripts/hot-symbols.sh $GPUBIND"

# Laid out together: the functions exec runs lie within a stretch of .text not much longer than
# their sizes added up (elsewhere they are spread over all of it).
read -r span size text < <(nm -S --defined-only "$GPUBIND" | /usr/bin/python3 -c '
import subprocess, sys
hot = set(open(sys.argv[1]).read().split())
syms = [(int(f[0], 16), int(f[1], 16)) for f in (l.split() for l in sys.stdin) if len(f) == 4 and f[3] in hot and f[2] in "TtW"]
sections = [l.split() for l in subprocess.run(["size", "-A", sys.argv[2]], capture_output=True, text=True).stdout.splitlines()]
text = next((int(f[1]) for f in sections if f and f[0] == ".text"), 0)
span = max(a + s for a, s in syms) - min(a for a, s in syms) if syms else 0
print(span, sum(s for a, s in syms), text)' "$WORK/ran.txt" "$GPUBIND")
[ "${size:-0}" -gt 0 ] && [ "$span" -lt $((size * 3 / 2)) ] \
  && pass "exec's functions, $((size / 1024)) KiB, lie within $((span / 1024)) KiB of the $((text / 1024)) KiB .text" \
  || fail "exec's functions, $((${size:-0} / 1024)) KiB, span $((${span:-0} / 1024)) KiB of the $((${text:-0} / 1024)) KiB .text: the link did not lay them out together (lld and src/CMakeLists.txt)"
finish
