#!/usr/bin/env bash
# The drawings in a real browser: topo/plan/compare/check --format svg and bench --plot rendered by headless
# Chromium (scripts/svg-to-png.sh) to PNGs of the drawing's own size that are not blank (many
# colours, the ranks' among them). Skips when Debian's chromium is not installed.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
command -v chromium >/dev/null || skip "chromium is not installed (Debian package chromium; scripts/install-deps.sh installs it)"
PY=/usr/bin/python3

"$GPUBIND" plan --topology example:dgx-h100 --format svg >"$WORK/plan.svg" || fail "plan --format svg"
"$GPUBIND" topo --topology example:dgx-a100-nps4 --format svg >"$WORK/topo.svg" || fail "topo --format svg"
"$GPUBIND" plan --topology "$here/tests/data/svg/64gpu.json" --format svg >"$WORK/plan64.svg" || fail "plan --format svg, 64 GPUs"
"$GPUBIND" compare --topology example:dgx-a100-nps4 --format svg >"$WORK/compare.svg" || fail "compare --format svg"
"$GPUBIND" check --root "$here/tests/data/check/h100-wrong-socket" --topology example:dgx-h100 --format svg >"$WORK/check.svg"
[ $? = 3 ] || fail "check --format svg: expected exit 3 (findings)"
"$GPUBIND" bench --input "$here/tests/data/bench/vm-2cpu-noise2.json" --plot "$WORK/bench.svg" >/dev/null || fail "bench --plot"

for name in plan topo plan64 compare check bench; do
  if ! "$here/scripts/svg-to-png.sh" "$WORK/$name.svg" "$WORK/$name.png" 2>"$WORK/$name.err"; then
    fail "$name: chromium did not render it: $(cat "$WORK/$name.err")"
    continue
  fi
  $PY - "$WORK/$name.svg" "$WORK/$name.png" <<'PYEOF' && pass "$name: Chromium renders it to a PNG of its size, not blank" || fail "$name: the PNG"
import re, struct, sys, zlib
svg, png = open(sys.argv[1]).read(), open(sys.argv[2], "rb").read()
want = tuple(int(x) for x in re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg).groups())
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
chunks, at = {}, 8
while at < len(png):
    n, kind = struct.unpack(">I4s", png[at:at + 8])
    chunks.setdefault(kind, []).append(png[at + 8:at + 8 + n])
    at += 12 + n
w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
assert (w, h) == want, f"{w}x{h}, the drawing is {want[0]}x{want[1]}"
assert depth == 8 and colour in (2, 6), f"depth {depth} colour type {colour}"
raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
bpp = 3 if colour == 2 else 4
stride = w * bpp + 1
# Undo the PNG row filters (None, Sub, Up, Average, Paeth) to read real pixels.
rows, prev = [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
colours = {row[x:x + 3] for row in rows[::4] for x in range(0, w * bpp, bpp * 4)}
assert len(colours) >= 8, f"only {len(colours)} colours: blank?"
white = sum(1 for row in rows[::4] for x in range(0, w * bpp, bpp * 4) if row[x:x + 3] == b"\xff\xff\xff")
total = len(rows[::4]) * len(range(0, w * bpp, bpp * 4))
assert white < total * 0.98, "almost all white"
print(f"{w}x{h}, {len(colours)} colours sampled")
PYEOF
done
finish
