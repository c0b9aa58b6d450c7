#!/usr/bin/env bash
# Boots a throw-away QEMU VM (TCG, or KVM with VM_ACCEL=kvm; no disk image) with a chosen
# socket / NUMA / PCI layout on Debian's own kernel, runs one command in it as root, and exits
# with that command's status.
# The kernel gives real ACPI SRAT/SLIT NUMA nodes, PCI host bridges with _PXM (so devices get
# numa_node and local_cpulist), real page placement and real migrations. Facts behind the recipe:
# ../shared/notes/qemu-numa.md.
#
#   vm.sh --layout 2s4n --cache DIR [--copy FILE]... [--tree DIR:GUEST_DIR]... [--gpu-id 10de:2330:030200] -- COMMAND...
#
# Layouts (sockets x NUMA nodes x CPUs; fake GPUs and NICs behind one PCIe host bridge per node):
#   2s4n        2 sockets x 2 nodes, 8 CPUs, a GPU on each node (buses 21, 41, 61, 81), NICs on
#               nodes 0 and 2 (buses 22, 62).
#   2s-unknown  2 sockets, a node each, 4 CPUs, 2 GPUs on the root bus (00:10.0, 00:11.0): no
#               NUMA node in sysfs (numa_node -1), as in cloud VMs.
#   2s2n-smt    2 sockets, a node each, 2 cores x 2 threads per socket, 8 GPUs and 2 NICs behind
#               PCIe switches (every path class: PIX, PXB, NODE, SYS).
#   1s4n-nps4   1 socket in 4 nodes (NPS4 style), 8 CPUs, GPUs on nodes 0 and 2, a NIC on 2, and a
#               fifth node with memory only.
#   4s8n        4 sockets x 2 nodes, 16 CPUs, a GPU on each node, NICs on nodes 0, 2, 4 and 6.
# The GPUs are QEMU display devices (vendor 1234); --gpu-id makes sysfs readers see another
# vendor:device:class (bind-mounted over their sysfs files in the guest, which is what gpubind
# reads). NICs are bare e1000e functions (no driver: faster boots; gpubind knows them by PCI
# class).
# Each copied ELF brings the libraries ldd names; a --tree is copied as it is (a root of its own,
# for chroot: its programs use its libraries). The command's output is printed when it ends.
# Exit status: the command's; 124 the VM timed out; 125 it never ran the command (no kernel,
# panic): the console's tail is printed. 77: qemu or a kernel is missing (a skip).
set -u
layout=2s4n cache="" gpu_id="" timeout=${VM_TIMEOUT:-240}
copies=() trees=()
while [ $# -gt 0 ]; do
  case $1 in
    --layout) layout=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --copy) copies+=("$2"); shift 2 ;;
    --tree) trees+=("$2"); shift 2 ;;
    --gpu-id) gpu_id=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] && [ -n "$cache" ] || { echo "usage: vm.sh --layout L --cache DIR [--copy F]... -- COMMAND" >&2; exit 2; }
qemu=$(command -v qemu-system-x86_64) || { echo "SKIP: qemu-system-x86_64 not found (Debian package qemu-system-x86)"; exit 77; }
busybox=$(command -v busybox) || { echo "SKIP: busybox not found (Debian package busybox-static)"; exit 77; }
kernel=$(ls -v /boot/vmlinuz-* 2>/dev/null | tail -1)
[ -n "$kernel" ] && [ -r "$kernel" ] || { echo "SKIP: no readable /boot/vmlinuz-* (Debian package linux-image-amd64)"; exit 77; }

mkdir -p "$cache"
# The kernel as an uncompressed ELF, booted through its PVH entry: decompressing the bzImage
# under TCG costs 5-6 s per boot. The compressed payload starts at its format's magic bytes.
vmlinux="$cache/$(basename "$kernel").elf"
if [ ! -s "$vmlinux" ]; then
  for fmt in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
    tool=${fmt%%:*} magic=${fmt#*:}
    command -v "$tool" >/dev/null || continue
    for off in $(LC_ALL=C grep -obUaP "$magic" "$kernel" | cut -d: -f1); do
      tail -c +$((off + 1)) "$kernel" | "$tool" -dc >"$vmlinux.$$.tmp" 2>/dev/null
      # Two VMs may start at once: each unpacks its own copy and renames it in place (atomic).
      if [ "$(head -c 4 "$vmlinux.$$.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then mv "$vmlinux.$$.tmp" "$vmlinux"; break 2; fi
    done
  done
  rm -f "$vmlinux.$$.tmp"
  [ -s "$vmlinux" ] || { echo "SKIP: could not extract an ELF kernel from $kernel"; exit 77; }
fi

threads=1 switches=0 cpu_nodes=""
case $layout in
  2s4n)
    sockets=2 nodes=4 cpus=8 mem_per_node=384
    gpu_nodes="0 1 2 3" nic_nodes="0 2"
    dist() { [ $(($1 / 2)) = $(($2 / 2)) ] && echo 12 || echo 32; }  # nodes 0,1 on socket 0; 2,3 on 1
    ;;
  2s-unknown)
    sockets=2 nodes=2 cpus=4 mem_per_node=512
    gpu_nodes="- -" nic_nodes=""
    dist() { echo 21; }
    ;;
  2s2n-smt)
    sockets=2 nodes=2 cpus=8 threads=2 mem_per_node=512 switches=1
    gpu_nodes="" nic_nodes=""
    dist() { echo 21; }
    ;;
  1s4n-nps4)
    sockets=1 nodes=5 cpu_nodes=4 cpus=8 mem_per_node=256
    gpu_nodes="0 2" nic_nodes="2"
    dist() { [ "$2" = 4 ] && echo 32 || echo 12; }  # node 4: memory only, farther from all
    ;;
  4s8n)
    sockets=4 nodes=8 cpus=16 mem_per_node=256
    gpu_nodes="0 1 2 3 4 5 6 7" nic_nodes="0 2 4 6"
    dist() { [ $(($1 / 2)) = $(($2 / 2)) ] && echo 12 || echo 32; }
    ;;
  *) echo "vm.sh: unknown layout $layout" >&2; exit 2 ;;
esac
cpu_nodes=${cpu_nodes:-$nodes}
step=$((nodes > 6 ? 0x10 : 0x20))  # buses per node's host bridge: 8-bit bus numbers

# The devices: on node n, behind its own PCIe host bridge (pxb-pcie, whose ACPI _PXM is n), the
# node's GPUs then its NICs, each behind a root port (bus (n+1)*step + 1 + k; step 0x20, or
# 0x10 beyond 6 nodes). A node "-" puts
# a GPU on the root bus at slot 0x10 + i: no NUMA node, as in cloud VMs.
dev_args=()
for n in $(seq 0 $((nodes - 1))); do
  kinds=()
  for g in $gpu_nodes; do [ "$g" = "$n" ] && kinds+=(gpu); done
  for m in $nic_nodes; do [ "$m" = "$n" ] && kinds+=(nic); done
  [ ${#kinds[@]} = 0 ] && continue
  dev_args+=(-device pxb-pcie,id=pxb$n,bus_nr=$(((n + 1) * step)),numa_node=$n,bus=pcie.0)
  for k in "${!kinds[@]}"; do
    dev_args+=(-device pcie-root-port,id=rp$n.$k,bus=pxb$n,chassis=$((n + 1)),slot=$k)
    if [ "${kinds[$k]}" = gpu ]; then
      dev_args+=(-device "VGA,id=gpu$n.$k,romfile=,bus=rp$n.$k")
    else
      dev_args+=(-device "e1000e,id=nic$n.$k,romfile=,mac=52:54:00:00:0$n:0$k,bus=rp$n.$k")
    fi
  done
done
# PCIe switches (switches=1), per node n: a host bridge with a switch holding two GPUs, the
# node's NIC and a second switch with a third GPU (PIX, PXB), and another host bridge of the same
# node with a fourth GPU (NODE); the other node's GPUs are SYS.
if [ "$switches" = 1 ]; then
  for n in $(seq 0 $((nodes - 1))); do
    base=$(((n + 1) * 0x40)) c=$((10 * n))
    dev_args+=(-device pxb-pcie,id=pxbA$n,bus_nr=$base,numa_node=$n,bus=pcie.0
               -device pcie-root-port,id=rpA$n,bus=pxbA$n,chassis=$((c + 1)),slot=0
               -device x3130-upstream,id=usA$n,bus=rpA$n)
    for k in 0 1 2 3; do
      dev_args+=(-device xio3130-downstream,id=dsA$n.$k,bus=usA$n,chassis=$((c + 2)),slot=$k)
    done
    dev_args+=(-device "VGA,id=gA$n.0,romfile=,bus=dsA$n.0" -device "VGA,id=gA$n.1,romfile=,bus=dsA$n.1"
               -device "e1000e,id=nA$n,romfile=,mac=52:54:00:00:1$n:00,bus=dsA$n.2"
               -device x3130-upstream,id=usB$n,bus=dsA$n.3
               -device xio3130-downstream,id=dsB$n.0,bus=usB$n,chassis=$((c + 3)),slot=0
               -device "VGA,id=gB$n.0,romfile=,bus=dsB$n.0"
               -device pxb-pcie,id=pxbC$n,bus_nr=$((base + 0x20)),numa_node=$n,bus=pcie.0
               -device pcie-root-port,id=rpC$n,bus=pxbC$n,chassis=$((c + 4)),slot=0
               -device "VGA,id=gC$n.0,romfile=,bus=rpC$n")
  done
fi
i=0
for g in $gpu_nodes; do
  if [ "$g" = - ]; then
    dev_args+=(-device "VGA,id=gpuroot$i,romfile=,bus=pcie.0,addr=$(printf '0x%x' $((0x10 + i)))")
  fi
  i=$((i + 1))
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gpubind-vm.XXXXXX")
qemu_pid=""
cleanup() {
  # Only the qemu this script started, through the PID of its `timeout`, which passes TERM on.
  [ -n "$qemu_pid" ] && kill -TERM "$qemu_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# --- the initramfs: busybox, the copied files and their libraries, /init ---
root="$work/root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp,run,lib64} "$root/sys/fs/cgroup"
cp "$busybox" "$root/bin/busybox"
stage() {  # stage FILE: the file at its own path in the guest, with its libraries
  local f=$1 lib
  mkdir -p "$root$(dirname "$f")"
  cp -L --remove-destination "$f" "$root$f"
  if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
      [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
    done
  fi
}
for f in "${copies[@]}"; do
  f=$(readlink -f "$f")
  if [ -d "$f" ]; then
    while IFS= read -r g; do stage "$g"; done < <(find "$f" -type f)
  else
    stage "$f"
  fi
done
for t in "${trees[@]}"; do
  mkdir -p "$root${t#*:}"
  cp -a "${t%%:*}/." "$root${t#*:}/"
done
printf '%s\n' "$@" >"$root/command.args"
printf '%s' "$PWD" >"$root/command.cwd"
cat >"$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin:/usr/local/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
# Fake GPU ids: what sysfs readers see, over each QEMU display device's own files.
if [ -n "$gpu_id" ]; then
  mkdir -p /run/ids
  for d in /sys/bus/pci/devices/*; do
    [ "\$(cat \$d/vendor)" = 0x1234 ] || continue
    bdf=\${d##*/}
    echo 0x$(echo "$gpu_id" | cut -d: -f1) >/run/ids/\$bdf.vendor
    echo 0x$(echo "$gpu_id" | cut -d: -f2) >/run/ids/\$bdf.device
    echo 0x$(echo "$gpu_id:030200" | cut -d: -f3) >/run/ids/\$bdf.class
    for a in vendor device class; do mount --bind /run/ids/\$bdf.\$a \$d/\$a; done
  done
fi
cd "\$(cat /command.cwd)" 2>/dev/null || cd /
( exec 0</dev/null; IFS='
'; set -- \$(cat /command.args); "\$@" ) >/dev/ttyS1 2>&1
echo "===VM-RC=\$?===" >/dev/ttyS1
sync
# isa-debug-exit: qemu leaves at once, without a guest shutdown.
printf '\\001' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$work/initrd.cpio"

# --- the machine ---
# TCG by default: an Intel-flavoured CPU of family 6 (SMT siblings and sub-socket NUMA nodes
# without the kernel's topology warnings), without AVX-512. VM_ACCEL=kvm uses the host's KVM.
if [ "${VM_ACCEL:-tcg}" = kvm ]; then
  accel=(-accel kvm -cpu host)
else
  accel=(-accel tcg,thread=single -cpu max,vendor=GenuineIntel,family=6,model=85,stepping=4)
fi
args=(-machine q35,sata=off,smbus=off,vmport=off,smm=off "${accel[@]}"
      -m $((nodes * mem_per_node))M -smp $cpus,sockets=$sockets,cores=$((cpus / sockets / threads)),threads=$threads
      -nodefaults -no-user-config -display none -no-reboot
      -device isa-debug-exit,iobase=0xf4,iosize=0x04)
for n in $(seq 0 $((nodes - 1))); do
  args+=(-object memory-backend-ram,id=mem$n,size=${mem_per_node}M -numa node,nodeid=$n,memdev=mem$n)
done
# Cores (all threads of a core on one node) spread over the nodes with CPUs; the others hold
# memory only (HBM, CXL, a GPU's memory).
cores=$((cpus / threads)) per_socket=$((cpus / threads / sockets))
for c in $(seq 0 $((cores - 1))); do
  args+=(-numa cpu,node-id=$((c / (cores / cpu_nodes))),socket-id=$((c / per_socket)),core-id=$((c % per_socket)))
done
for a in $(seq 0 $((nodes - 1))); do
  for b in $(seq $((a + 1)) $((nodes - 1))); do args+=(-numa dist,src=$a,dst=$b,val=$(dist $a $b)); done
done
args+=("${dev_args[@]}")
args+=(-kernel "$vmlinux" -initrd "$work/initrd.cpio"
       -append "console=ttyS0 panic=-1 quiet lpj=10000000 cryptomgr.notests mitigations=off nokaslr audit=0 security=none rodata=off nowatchdog tsc=reliable init_on_alloc=0 pcie_ports=compat rdinit=/init numa_balancing=disable"
       -serial "file:$work/console.log" -serial "file:$work/output.log")

timeout -k 5 "$timeout" "$qemu" "${args[@]}" >"$work/qemu.log" 2>&1 &
qemu_pid=$!
wait "$qemu_pid"
qemu_rc=$?
qemu_pid=""
grep -v '^===VM-RC=' "$work/output.log"
rc=$(sed -n 's/^===VM-RC=\([0-9]*\)===.*/\1/p' "$work/output.log" | tail -1)
if [ -n "$rc" ]; then exit "$rc"; fi
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
  echo "vm.sh: the VM timed out after ${timeout}s; console tail:"; tail -20 "$work/console.log"; exit 124
fi
echo "vm.sh: the VM ended without running the command (qemu exit $qemu_rc); qemu: $(tail -3 "$work/qemu.log" | tr '\n' ' ')"
echo "console tail:"; tail -20 "$work/console.log"
exit 125
