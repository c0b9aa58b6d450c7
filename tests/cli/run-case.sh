#!/usr/bin/env bash
# Runs one case of tests/cli/cases.txt against the built binary and compares its exit status and
# output (stdout, then stderr) with tests/golden/NAME.out. UPDATE_GOLDEN=1 rewrites the golden.
set -u
GPUBIND=$1
name=$2
here=$(cd "$(dirname "$0")" && pwd)
line=$(grep -E "^${name} " "$here/cases.txt") || { echo "no case named $name"; exit 1; }
read -r _ want_rc cmd <<<"$line"
TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
# Hermetic: no launcher, GPU or gpubind variable of the caller's shell reaches the case, and the
# topology cache is the case's own (exec would otherwise write the user's).
for v in $(compgen -e | grep -E '^(GPUBIND_|SLURM_|OMPI_|PMI_|PMIX_|MV2_|MPI_LOCALRANKID|FLUX_|LOCAL_RANK|LOCAL_WORLD_SIZE|RANK$|WORLD_SIZE|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_NUM_THREADS|NCCL_IGNORE_CPU_AFFINITY|NCCL_PROXY_CPUSET|AMD_CPU_AFFINITY|GOMP_CPU_AFFINITY|CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|ZE_AFFINITY_MASK)'); do
  unset "$v"
done
export GPUBIND TMPDIR GPUBIND_CACHE_DIR="$TMPDIR/cache"
# Records that leave the node carry the time (RFC 3339); the goldens fix it as reproducible
# builds fix theirs: 2026-12-04T00:00:00Z.
export SOURCE_DATE_EPOCH=1796342400
# The fake NVML and ROCm SMI the test suite builds (tests/fakes), for cases that load them.
build_dir=$(cd "$(dirname "$GPUBIND")/.." && pwd)
export FAKE_NVML="$build_dir/tests/fake-nvml" FAKE_NVML_OLD="$build_dir/tests/fake-nvml-old" \
  FAKE_ROCM_SMI="$build_dir/tests/fake-rocm-smi" FAKE_CUDART="$build_dir/tests/fake-cudart" FAKE_HIP="$build_dir/tests/fake-hip"
case $cmd in
  *FAKE_*)
    for lib in "$FAKE_NVML/libnvidia-ml.so.1" "$FAKE_NVML_OLD/libnvidia-ml.so.1" "$FAKE_ROCM_SMI/librocm_smi64.so.1" \
      "$FAKE_CUDART/libcudart.so.12" "$FAKE_HIP/libamdhip64.so.6"; do
      [ -e "$lib" ] || { echo "SKIP $name: the fake GPU libraries were not built beside $GPUBIND ($lib)"; exit 77; }
    done ;;
esac
# topo --measure copies from every NUMA node of the topology that this host has: the goldens are
# those of a one-node host (CI's), where node 0 is measured and the others are refused.
case $cmd in
  *--measure*) [ "$(cat /sys/devices/system/node/online 2>/dev/null || echo 0)" = 0 ] \
    || { echo "SKIP $name: the golden is a one-NUMA-node host's; this one has nodes $(cat /sys/devices/system/node/online)"; exit 77; } ;;
esac
# The real-machine corpus, read in place beside the checkout (../shared/topologies).
export CORPUS
CORPUS=$(cd "$here/../../.." && pwd)/shared/topologies
case $cmd in
  *CORPUS*) [ -d "$CORPUS" ] || { echo "SKIP $name: no corpus at $CORPUS (a checkout beside shared/ has it)"; exit 77; } ;;
esac
eval "$cmd" >"$TMPDIR/stdout" 2>"$TMPDIR/stderr"
rc=$?
{
  cat "$TMPDIR/stdout"
  if [ -s "$TMPDIR/stderr" ]; then
    echo "--- stderr ---"
    cat "$TMPDIR/stderr"
  fi
} | sed -e "s#$TMPDIR#\$TMPDIR#g" -e "s#$CORPUS#\$CORPUS#g" >"$TMPDIR/actual"
golden="$here/../golden/$name.out"
if [ "${UPDATE_GOLDEN:-0}" = 1 ] && ! cmp -s "$TMPDIR/actual" "$golden"; then  # only what changed
  cp "$TMPDIR/actual" "$golden"
  echo "updated $golden"
fi
status=0
if [ "$rc" != "$want_rc" ]; then
  echo "FAIL $name: exit status $rc, expected $want_rc"
  status=1
fi
if [ ! -f "$golden" ]; then
  echo "FAIL $name: no golden file $golden (run with UPDATE_GOLDEN=1 and review it)"
  status=1
elif ! diff -u "$golden" "$TMPDIR/actual"; then
  echo "FAIL $name: output differs from $golden"
  status=1
fi
[ $status = 0 ] && echo "ok $name"
exit $status
