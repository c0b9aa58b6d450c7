#!/usr/bin/env bash
# gpubind killed (SIGKILL) while it unpacks a gathered topology archive (issue 29 item 8): tar
# dies with it (PR_SET_PDEATHSIG) and the temporary directory it unpacked into is removed by the
# cleaner that waits on gpubind, not left in $TMPDIR for ever. A tar that never finishes stands
# in for a slow one (gpubind runs the first tar on PATH), so the kill lands while it runs.
set -u
. "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/bin" "$WORK/tmp"
printf '#!/bin/sh\necho $$ > %s/tar.pid\nexec sleep 600\n' "$WORK" >"$WORK/bin/tar"
chmod +x "$WORK/bin/tar"
echo x >"$WORK/gathered.tar.bz2"
PATH="$WORK/bin:$PATH" TMPDIR="$WORK/tmp" "$GPUBIND" topo --topology "$WORK/gathered.tar.bz2" >/dev/null 2>&1 &
gp=$!
unpacking() { [ -s "$WORK/tar.pid" ] && ls "$WORK/tmp" | grep -q '^gpubind-topo\.'; }
wait_until 30 unpacking || { fail "gpubind did not start unpacking: $(ls "$WORK/tmp")"; kill -KILL $gp; finish; }
tar_pid=$(cat "$WORK/tar.pid")
kill -KILL $gp
wait $gp 2>/dev/null
cleaned() { ! ls "$WORK/tmp" | grep -q '^gpubind-topo\.'; }
wait_until 30 cleaned && pass "the unpacking directory is removed after gpubind was killed" || fail "left behind: $(ls "$WORK/tmp")"
wait_until 30 none_alive "$tar_pid" && pass "tar ended with gpubind" || { fail "tar $tar_pid outlived gpubind"; kill "$tar_pid"; }
finish
