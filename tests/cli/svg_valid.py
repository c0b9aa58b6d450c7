#!/usr/bin/python3
"""Every SVG the CLI goldens hold (topo/plan --format svg, bench --plot) is well-formed XML for a
real parser (Python's expat), an <svg> root in the SVG namespace with a size, and every drawn
rectangle has a non-negative size. The goldens are the binary's output (the cli.* tests compare
them byte for byte).

Usage: svg_valid.py GOLDEN_DIR
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET

golden = sys.argv[1]
files = sorted(f for f in glob.glob(os.path.join(golden, "*.out")) if "svg" in os.path.basename(f) or f.endswith("bench_input_plot.out"))
if not files:
    print("FAIL: no SVG golden in " + golden)
    sys.exit(1)
bad = 0
ns = "{http://www.w3.org/2000/svg}"
for f in files:
    text = open(f, encoding="utf-8").read().split("--- stderr ---")[0]
    try:
        root = ET.fromstring(text)
        assert root.tag == ns + "svg", root.tag
        assert int(root.get("width")) > 0 and int(root.get("height")) > 0
        for r in root.iter(ns + "rect"):
            for k in ("width", "height"):
                v = r.get(k)
                assert v is None or v.endswith("%") or float(v) >= 0, f"rect {k}={v}"
        print("ok: " + os.path.basename(f))
    except (ET.ParseError, AssertionError, ValueError) as e:
        print(f"FAIL: {os.path.basename(f)}: {e}")
        bad += 1
sys.exit(1 if bad else 0)
