#!/usr/bin/env bash
# Renders an SVG that gpubind wrote (topo/plan --format svg, bench --plot) to a PNG of the same
# size with headless Chromium (Debian package chromium), for slides and wikis that take no SVG.
# Usage: scripts/svg-to-png.sh IN.svg OUT.png
set -euo pipefail
in=${1:?usage: $0 IN.svg OUT.png} out=${2:?usage: $0 IN.svg OUT.png}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "svg-to-png: error: chromium: not installed (Debian package chromium)" >&2; exit 1; }
[ -r "$in" ] || { echo "svg-to-png: error: $in: cannot read it" >&2; exit 1; }
# The drawing's own size, from the root element's width and height.
size=$(head -c 4096 "$in" | sed -n 's/.*<svg[^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' | head -1)
[ -n "$size" ] || { echo "svg-to-png: error: $in: no <svg width=... height=...> (not written by gpubind?)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# A closed network: no background connections, updates or sync; a fresh profile; root needs --no-sandbox.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars --window-size="$size" \
  --screenshot="$(realpath -m "$out")" "file://$(realpath "$in")" >/dev/null 2>"$profile/stderr" || {
  echo "svg-to-png: error: chromium failed: $(tail -3 "$profile/stderr" | tr '\n' ' ')" >&2
  exit 1
}
[ -s "$out" ] || { echo "svg-to-png: error: chromium wrote no $out" >&2; exit 1; }
