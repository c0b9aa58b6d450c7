#!/usr/bin/env bash
# The qemu tier: boots the layout's VM once (tests/qemu/vm.sh), runs every check of that layout in
# it (tests/qemu/guest_LAYOUT.sh), and judges the output on the host against the plan gpubind
# makes from the layout's fixture (tests/qemu/judge.py, tests/data/qemu/LAYOUT.json): one ok/FAIL
# line per check. Prints the boot's wall time.
# Usage: tier.sh LAYOUT GPUBIND GPUBIND_HWLOC_MODULE FIRST_TOUCH FAKE_CUDART FAKE_NVML_DIR CACHE_DIR
set -u
layout=$1 gpubind=$2 module=$3 touch=$4 cudart=$5 nvml=$6 cache=$7
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data/qemu" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
# What each layout's guest script is given (and so copied into the VM); the GPUs are NVIDIA
# H100s to sysfs unless the layout says otherwise.
guest=$layout gpu_id=10de:2330:030200
case $layout in
  2s4n) helpers=("$touch" "$cudart" "$data/cudart-$layout.json") ;;
  2s-unknown) helpers=("$nvml" "$data/nvml-$layout.json") ;;
  2s2n-smt) guest=plan helpers=(8) ;;
  4s8n) guest=plan helpers=(8 "$touch" 5) ;;
  1s4n-nps4) guest=plan helpers=(2 "$touch" 4) gpu_id=1002:740c:038000 ;;  # AMD MI250X ids
  *) echo "tier.sh: unknown layout $layout"; exit 2 ;;
esac
copies=()
for f in "$gpubind" "$(dirname "$gpubind")/gpubind-full" "$module" "${helpers[@]}" "$here/guest_$guest.sh" "$here/show_rank.sh"; do [ -e "$f" ] && copies+=(--copy "$f"); done
# hwloc's own view (lstopo with its PCI plugin), to compare gpubind's discovery with.
for f in /usr/bin/lstopo-no-graphics /usr/lib/x86_64-linux-gnu/hwloc/hwloc_pci.so; do
  [ -e "$f" ] || { echo "SKIP: hwloc's lstopo or PCI plugin is not installed ($f; Debian package hwloc-nox)"; exit 77; }
  copies+=(--copy "$f")
done
# Open MPI's mpirun for 2s4n: the launcher, its components and help texts, PMIx's, and the user
# database it looks the user up in.
if [ "$layout" = 2s4n ]; then
  for f in /usr/bin/orterun /usr/bin/orted /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
    /usr/share/openmpi /etc/openmpi /etc/passwd /etc/group; do
    [ -e "$f" ] || { echo "SKIP: Open MPI is not installed ($f; Debian package openmpi-bin)"; exit 77; }
    copies+=(--copy "$f")
  done
fi
"$here/vm.sh" --layout "$layout" --cache "$cache" --gpu-id "$gpu_id" "${copies[@]}" -- \
  sh "$here/guest_$guest.sh" "$gpubind" "${helpers[@]}" >"$out"
rc=$?
echo "VM $layout: booted, checked and stopped in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s (exit $rc)"
[ $rc = 77 ] && { cat "$out"; exit 77; }
if [ $rc != 0 ]; then
  echo "FAIL: the guest script did not finish (exit $rc):"
  tail -40 "$out"
  exit 1
fi
/usr/bin/python3 "$here/judge.py" "$layout" "$gpubind" "$data/$layout.json" "$out"
