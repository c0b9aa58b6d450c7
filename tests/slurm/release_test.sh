#!/usr/bin/env bash
# gres-conf on the Slurm sites run now, judged by that Slurm's own slurmctld: for each machine
# shape (the built-in examples and every corpus machine with GPUs), `gpubind slurm gres-conf
# --slurm-version RELEASE` writes the gres.conf lines and the slurm.conf node line; a throw-away
# cluster of that release (Debian's packages in a root made by scripts/slurm-release.sh, run by
# chroot) registers one node per shape, and each must come up IDLE with its GPUs on the sockets
# gpubind planned (scontrol's Gres=gpu:TYPE:N(S:...)). Beside each, the lines written for 22.05 on a
# node of the shape's packages must be refused exactly where gpubind changed them for RELEASE (a
# dgx-a100-nps4 GPU's NUMA node is a quarter of a package), so the test can fail; `gpubind doctor`'s
# slurm_gres check on the same files must say so first (FAIL where refused, OK where taken).
#
#   release_test.sh GPUBIND RELEASE CORPUS_DIR
#
# Nodes are slurmd processes on this host claiming the shape (SlurmdParameters=config_overrides);
# slurmctld judges Cores= against the node line's sockets at registration. Release 24.11 takes the
# socket parameter only for every node, so its shapes run in one cluster per parameter.
set -u
GPUBIND=${1:?gpubind binary}
RELEASE=${2:?release, e.g. 24.11}
CORPUS=${3:?corpus directory}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/release_lib.sh"
need_release "chroot, mounts, slurmd as root"
command -v unshare >/dev/null || skip "no unshare"

W=$(mktemp -d /tmp/gpubind-slurm-release.XXXXXX)
T=/mnt/gpubind-test  # the cluster's directory as its daemons see it (release_cluster.sh)
trap 'rm -rf "$W"' EXIT

# The shapes: name and topology source.
shapes=()
for e in dgx-a100-nps4 dgx-h100 frontier-like gh200 slurm-2x8-8gpu workstation-socket0 cloud-vm-unknown-locality; do
  shapes+=("example:$e")
done
for f in "$CORPUS"/*.xml "$CORPUS"/*.tar.bz2; do
  [ -f "$f" ] || continue
  case $(basename "$f") in nogpu-*) continue ;; esac
  "$GPUBIND" topo --topology "$f" --json 2>/dev/null | grep -q '"pci"' || continue  # loads, with devices
  shapes+=("$f")
done

# One directory per cluster (by the global SlurmdParameters the release needs); node i of it
# gets gres-conf's lines with its devices mapped to fake files under the directory.
declare -A cluster_of
n=0
for src in "${shapes[@]}"; do
  n=$((n + 1))
  out=$("$GPUBIND" slurm gres-conf --quiet --topology "$src" --node-name "n$n" --slurm-version "$RELEASE") ||
    { fail "gres-conf $src"; continue; }
  global=$(printf '%s\n' "$out" | sed -n 's/^# slurm.conf: SlurmdParameters=//p')
  c=${global:-default}
  cluster_of[$c]=1
  mkdir -p "$W/$c/nodes"
  printf '%s\n' "$out" > "$W/$c/nodes/n$n.gres"
  echo "$src" > "$W/$c/nodes/n$n.src"
  [ -n "$global" ] && echo "$global" > "$W/$c/global"
  # Cores kept from jobs, on the built-in shapes: three more nodes of the same lines, r asking 2
  # cores per GPU (RestrictedCoresPerGPU) beside one specialized core per socket, x a whole socket
  # per GPU beside one specialized core, c one core per GPU beside CpuSpecList naming a thread of
  # the first GPU's lowest core (whatever counts as a socket, the ids are cores x threads). doctor predicts
  # each node (the cores kept, or that it goes down) and slurmctld must agree.
  case $src in
    example:*)
      sockets=$(printf '%s\n' "$out" | sed -n 's/^# slurm.conf: NodeName=.* SocketsPerBoard=\([0-9]*\) .*/\1/p')
      per=$(printf '%s\n' "$out" | sed -n 's/^# slurm.conf: NodeName=.* CoresPerSocket=\([0-9]*\) .*/\1/p')
      tpc=$(printf '%s\n' "$out" | sed -n 's/^# slurm.conf: NodeName=.* ThreadsPerCore=\([0-9]*\).*/\1/p')
      # c: CpuSpecList naming the first thread of the first GPU's lowest core (Slurm keeps the core).
      first=$(printf '%s\n' "$out" | sed -n 's/^NodeName=.* Cores=\([0-9]*\).*/\1/p' | head -1)
      if [ -n "$sockets" ] && [ -n "$first" ]; then
        for v in "r:RestrictedCoresPerGPU=2 CoreSpecCount=$sockets" "x:RestrictedCoresPerGPU=$per CoreSpecCount=1" \
          "c:RestrictedCoresPerGPU=1 CpuSpecList=$((first * tpc))"; do
          k=${v%%:*}$n
          printf '%s\n' "$out" | sed -e "s/NodeName=n$n /NodeName=$k /" -e "/^# slurm.conf: NodeName=$k /s/ Gres=/ ${v#*:} Gres=/" > "$W/$c/nodes/$k.gres"
          echo "$src" > "$W/$c/nodes/$k.src"
          : > "$W/$c/nodes/$k.kept"
        done
      fi ;;
  esac
  # From 25.11 `slurmd -C --parameters=P` says what slurmd counts on a machine, here the shape's
  # hwloc XML (HWLOC_XMLFILE): an example as gpubind exports it, a corpus capture as it is.
  case $RELEASE in 24.* | 25.05) continue ;; esac
  case $src in
    example:*) "$GPUBIND" topo --quiet --topology "$src" --format xml > "$W/$c/nodes/n$n.xml" ;;
    *.nccl.xml | *.rccl.xml) continue ;;
    *.xml) cp "$src" "$W/$c/nodes/n$n.xml" ;;
    *) continue ;;
  esac
  "$GPUBIND" topo --quiet --topology "$src" --json > "$W/$c/nodes/n$n.json"
  param=$(printf '%s\n' "$out" | sed -n 's/^# slurm.conf: NodeName=.* Parameters=\([^ ]*\).*/\1/p')
  echo "HWLOC_XMLFILE=$T/nodes/n$n.xml slurmd -C ${param:+--parameters=$param} -vvvvvv > $T/nodes/n$n.C 2>&1" >> "$W/$c/steps.sh"
done
# Before: each shape's lines as written for 22.05 (each GPU's own cores) on a node of its packages,
# as sites had them. Slurm must refuse them exactly where gpubind did not keep them for RELEASE
# (it chose other sockets, or widened a GPU), and take them where it did: gpubind's reading of
# the release's rule, judged shape by shape.
package_line() {  # the node line of a topology's packages: "Boards=1 SocketsPerBoard=S CoresPerSocket=C ThreadsPerCore=T", or nothing
  "$GPUBIND" topo --quiet --topology "$1" --json 2>/dev/null | /usr/bin/python3 "$HERE/topology_json.py" node-shape
}
n=0
refusals=0
for src in "${shapes[@]}"; do
  n=$((n + 1))
  new=$(find "$W" -name "n$n.gres" | head -1)
  [ -n "$new" ] || continue
  grep -q '^NodeName=.* Cores=' "$new" || continue  # a GPU of known locality
  def=$(package_line "$src")
  [ -n "$def" ] || continue
  mkdir -p "$W/default/nodes"
  cluster_of[default]=1
  "$GPUBIND" slurm gres-conf --quiet --topology "$src" --node-name "b$n" --slurm-version 22.05 |
    sed "s/^# slurm.conf: NodeName=b$n Gres=/# slurm.conf: NodeName=b$n $def Gres=/" > "$W/default/nodes/b$n.gres"
  echo "$src" > "$W/default/nodes/b$n.src"
  if grep -q "^# Sockets here are slurmd's default" "$new" && grep -q "^# Each GPU's Cores= is exactly its own cores" "$new"; then
    echo taken > "$W/default/nodes/b$n.expect"
  else
    echo refused > "$W/default/nodes/b$n.expect"
    refusals=$((refusals + 1))
  fi
done
[ "$refusals" -gt 0 ] || fail "no shape's 22.05 lines are expected refused by $RELEASE: the test cannot tell"

# A node with RestrictedCoresPerGPU and CoreSpecCount: doctor's slurm_gres on its files says which
# cores slurmctld keeps (OK) or that it sets the node down (FAIL); scontrol must show the same.
kept_said=0 kept_down=0
# doctor_says DIR NODE SOURCE: doctor's slurm_gres line on the node's two files (its gres.conf, and
# slurm.conf of its node line and the cluster's SlurmdParameters), before any slurmd runs.
doctor_says() {
  local D=$1 node=$2
  mkdir -p "$D/doctor-$node/etc/slurm"
  { [ -f "$D/global" ] && echo "SlurmdParameters=$(cat "$D/global")"
    sed -n "s/^# slurm.conf: //p" "$D/nodes/$node.gres"; } > "$D/doctor-$node/etc/slurm/slurm.conf"
  cp "$D/nodes/$node.gres" "$D/doctor-$node/etc/slurm/gres.conf"
  "$GPUBIND" doctor --quiet --root "$D/doctor-$node" --topology "$3" --node-name "$node" --slurm-version "$RELEASE" \
    2>/dev/null | awk '$1 == "slurm_gres"'
}
judge_kept() {  # DIR NODE SOURCE SHOW STATE REASON
  local D=$1 node=$2 src=$3 show=$4 state=$5 reason=$6 said verdict
  said=$(doctor_says "$D" "$node" "$src")
  verdict=$(printf '%s\n' "$said" | awk '{print $2}')
  local want_res want_spec got_res got_spec
  want_res=$(printf '%s\n' "$said" | sed -n 's/.*\(RestrictedCoresPerGPU=[0-9]*\) keeps cores \([^ ]*\) for GPU jobs.*/\1(\2)/p')
  want_spec=$(printf '%s\n' "$said" | sed -n 's/.*(CPUSpecList=\([^)]*\)).*/\1/p')
  got_res=$(printf '%s\n' "$show" | sed -n 's/^ *\(RestrictedCoresPerGPU=[^ ]*\).*/\1/p')
  got_spec=$(printf '%s\n' "$show" | sed -n 's/.*CPUSpecList=\([^ ]*\).*/\1/p')
  case $verdict:$state in
    OK:IDLE*)
      if [ -n "$want_res" ] && [ "$want_res:$want_spec" = "$got_res:$got_spec" ]; then
        kept_said=$((kept_said + 1))
        pass "$RELEASE: $src as $node: IDLE, $got_res and CPUSpecList=$got_spec as doctor said"
      else
        fail "$RELEASE: $src as $node: doctor said '$want_res' CPUSpecList='$want_spec', Slurm '$got_res' CPUSpecList='$got_spec'"
      fi ;;
    FAIL:*)
      case $state:$reason in
        *DRAIN*:*RestrictedCoresPerGPU* | *INVAL*:*RestrictedCoresPerGPU*)
          # The cores the short GPU line got: doctor's "has N of the" and Slurm's "unique cores (N)".
          local want_got got
          want_got=$(printf '%s\n' "$said" | sed -n 's/.* has \([0-9]*\) of the .*/\1/p')
          got=$(printf '%s\n' "$reason" | sed -n 's/.*unique cores (\([0-9]*\)).*/\1/p')
          if [ -n "$got" ] && [ "$want_got" = "$got" ]; then
            kept_down=$((kept_down + 1))
            pass "$RELEASE: $src as $node: $state, as doctor said: ${reason%% \[*}"
          else
            fail "$RELEASE: $src as $node: doctor said a line gets $want_got cores ($said), Slurm: '$reason'"
          fi ;;
        *) fail "$RELEASE: $src as $node: doctor said RestrictedCoresPerGPU sets it down ($said), Slurm: $state '$reason'" ;;
      esac ;;
    *) fail "$RELEASE: $src as $node: doctor '$said', Slurm: $state '$reason'" ;;
  esac
}

# Before 24.05 the key is unknown: Debian 12's Slurm (22.05, where installed) stops reading a
# slurm.conf that has it, and doctor must say so for 22.05 while it reads the same file for RELEASE.
if command -v scontrol >/dev/null && command -v slurmd >/dev/null && slurmd -V 2>/dev/null | grep -q " 22\.05"; then
  mkdir -p "$W/old/etc/slurm"
  src=example:dgx-h100
  "$GPUBIND" slurm gres-conf --quiet --topology "$src" --node-name n1 --slurm-version 22.05 > "$W/old/etc/slurm/gres.conf"
  { echo "ClusterName=old"; echo "SlurmctldHost=localhost"
    sed -n 's/^# slurm.conf: \(NodeName=n1 \)/\1RestrictedCoresPerGPU=1 /p' "$W/old/etc/slurm/gres.conf"; } > "$W/old/etc/slurm/slurm.conf"
  said=$(SLURM_CONF=$W/old/etc/slurm/slurm.conf scontrol show node n1 2>&1)
  verdicts=$(for r in 22.05 "$RELEASE"; do
    "$GPUBIND" doctor --quiet --root "$W/old" --topology "$src" --node-name n1 --slurm-version "$r" 2>/dev/null | awk '$1 == "slurm_gres" {printf "%s ", $2}'
  done)
  case $said:$verdicts in
    *"unrecognized key: RestrictedCoresPerGPU"*:"FAIL OK ") pass "22.05 stops at RestrictedCoresPerGPU=, as doctor says for 22.05 (and not for $RELEASE)" ;;
    *) fail "22.05 and RestrictedCoresPerGPU=: scontrol '$(printf '%s' "$said" | head -2 | tr '\n' ' ')', doctor for 22.05 and $RELEASE: $verdicts" ;;
  esac
else
  echo "skipped: RestrictedCoresPerGPU= on 22.05: Debian 12's Slurm (slurmd -V 22.05) is not installed here"
fi

PORT=$((21000 + (RANDOM % 400) * 20))
for c in "${!cluster_of[@]}"; do
  D=$W/$c
  PORT=$((PORT + 200))
  "$HERE/release_cluster.sh" "$ROOTFS" "$D" "$PORT" > "$D/run.log" 2>&1 || { fail "$RELEASE cluster '$c' did not run: $(tail -3 "$D/run.log" | tr '\n' ' ')"; continue; }
  for g in "$D"/nodes/*.gres; do
    node=$(basename "$g" .gres)
    src=$(cat "$D/nodes/$node.src")
    show=$(awk -v n="NodeName=$node" '$1 == n {p=1} p && /^$/ {p=0} p' "$D/nodes.txt")
    state=$(printf '%s\n' "$show" | sed -n 's/.* State=\([^ ]*\).*/\1/p')
    reason=$(printf '%s\n' "$show" | sed -n 's/^ *Reason=//p')
    if [ -f "$D/nodes/$node.expect" ]; then
      expect=$(cat "$D/nodes/$node.expect")
      # doctor's slurm_gres on the same two files says, before any slurmd runs, what Slurm did.
      verdict=$(doctor_says "$D" "$node" "$src" | awk '{print $2}')
      case $expect:$verdict in
        refused:FAIL | taken:OK) pass "before: doctor's slurm_gres says $verdict for the 22.05 lines of $src" ;;
        *) fail "before: doctor's slurm_gres says '$verdict' for the 22.05 lines of $src, which $RELEASE should have $expect" ;;
      esac
      case $expect:$state:$reason in
        refused:*DRAIN*:*"doesn't match socket boundaries"* | refused:*INVAL*:*"doesn't match socket boundaries"*)
          pass "before: $RELEASE refuses the 22.05 lines of $src on its packages, as gpubind did: ${reason%% \[*}" ;;
        taken:IDLE*:*) pass "before: $RELEASE takes the 22.05 lines of $src on its packages, as gpubind did" ;;
        *) fail "before: $src on its packages with the 22.05 lines: gpubind expected them $expect by $RELEASE, Slurm: $state '$reason'" ;;
      esac
      continue
    fi
    if [ -f "$D/nodes/$node.kept" ]; then
      judge_kept "$D" "$node" "$src" "$show" "$state" "$reason"
      continue
    fi
    # What this release's slurmd counts on the shape, and the CPUs its own map gives each Cores=.
    if [ -f "$D/nodes/$node.C" ]; then
      if /usr/bin/python3 "$HERE/slurmd_counts.py" "$g" "$D/nodes/$node.json" "$D/nodes/$node.C" > "$D/nodes/$node.verdict"; then
        pass "$RELEASE: $src: slurmd -C on its hwloc XML counts what gres-conf wrote, and maps each GPU's Cores= to the GPU's CPUs ($(tail -1 "$D/nodes/$node.verdict"))"
      else
        fail "$RELEASE: $src: slurmd -C on its hwloc XML: $(grep FAIL "$D/nodes/$node.verdict" | head -3 | tr '\n' ' ')"
      fi
    fi
    # The sockets gpubind planned for each GPU type: its Cores= divided by CoresPerSocket.
    per=$(sed -n 's/^# slurm.conf: .* CoresPerSocket=\([0-9]*\) .*/\1/p' "$g")
    want=$(awk -v per="$per" '
      /^NodeName=.* Name=gpu / {
        type = ""; cores = ""
        for (i = 1; i <= NF; i++) { if ($i ~ /^Type=/) type = substr($i, 6); if ($i ~ /^Cores=/) cores = substr($i, 7) }
        if (cores == "") { any[type] = 1; next }
        n = split(cores, parts, ",")
        for (k = 1; k <= n; k++) { m = split(parts[k], r, "-"); lo = r[1]; hi = (m > 1 ? r[2] : r[1])
          for (s = int(lo / per); s <= int(hi / per); s++) sock[type, s] = 1 }
        types[type] = 1
      }
      END { for (t in types) { if (t in any) continue; line = ""; for (s = 0; s < 4096; s++) if ((t, s) in sock) line = line (line == "" ? "" : ",") s; print t " S:" line } }' "$g" | sort)
    # Gres=gpu:A:4(S:1,3),gpu:B:2(S:0-1): entries apart at the commas that do not start a number.
    got=$(printf '%s\n' "$show" | sed -n 's/^ *Gres=//p' | sed 's/,\([^0-9]\)/\n\1/g' | sed -n 's/^gpu:\([^:]*\):[0-9]*(S:\([^)]*\))$/\1 S:\2/p' |
      awk '{ split($2, a, ":"); n = split(a[2], parts, ","); line = ""
             for (k = 1; k <= n; k++) { m = split(parts[k], r, "-"); for (s = r[1]; s <= (m > 1 ? r[2] : r[1]); s++) line = line (line == "" ? "" : ",") s }
             print $1 " S:" line }' | sort)
    case $state in
      IDLE | IDLE+*)
        if [ "$got" = "$want" ]; then
          pass "$RELEASE: $src: node $node IDLE, GPUs on sockets as planned ($(printf '%s' "$want" | tr '\n' ' '))"
        else
          fail "$RELEASE: $src: node $node IDLE but its GPUs' sockets differ: planned '$(printf '%s' "$want" | tr '\n' ' ')', Slurm '$(printf '%s' "$got" | tr '\n' ' ')'"
        fi ;;
      *) fail "$RELEASE: $src: node $node is $state: $reason" ;;
    esac
  done
done

[ "$kept_said" -gt 0 ] && [ "$kept_down" -gt 0 ] ||
  fail "RestrictedCoresPerGPU: $kept_said node(s) kept cores and $kept_down went down as doctor said: the test needs both to tell"
echo "$failures failure(s)"
[ "$failures" = 0 ]
