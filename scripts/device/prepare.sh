#!/usr/bin/env bash
# Packs what a lent GPU machine needs into .gpu/ (ignored through .git/info/exclude), for one device
# call: `bash .gpu/run.sh` with .gpu carried. The machine (Ubuntu 24.04) has no libhwloc15, so the
# stripped binary, its modules and Debian's libhwloc and libudev travel with it.
set -eu
cd "$(dirname "$0")/../.."
cmake --build build --target gpubind gpubind_full -j"$(nproc)" >/dev/null
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .git/info
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >>.git/info/exclude
cp build/src/gpubind build/src/gpubind-full build/src/gpubind-hwloc.so build/src/gpubind-http.so .gpu/bin/ && strip .gpu/bin/*
cp -L /usr/lib/x86_64-linux-gnu/libhwloc.so.15 /lib/x86_64-linux-gnu/libudev.so.1 .gpu/lib/
cp scripts/device/nvml-probe.py scripts/device/run.sh scripts/device/watch-check.sh .gpu/
cp ../shared/device/gpu-verify.sh .gpu/
du -sh .gpu
