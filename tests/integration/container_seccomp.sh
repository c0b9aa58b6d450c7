#!/usr/bin/env bash
# A binding inside a real container whose seccomp profile refuses set_mempolicy (issue 32).
#
# Docker's default profile (since 18.09) and containerd's (Kubernetes' RuntimeDefault) allow
# get_mempolicy, mbind, set_mempolicy and set_mempolicy_home_node only to a container holding
# CAP_SYS_NICE, and answer anything they do not allow with EPERM; Debian 12's podman profile
# (/usr/share/containers/seccomp.json) allows the four to everyone and answers the rest with
# ENOSYS. Each container here is Debian's podman running crun on a rootfs made of this
# machine's own /usr (no image registry is reachable), with gpubind's build directory mounted in:
#   debian   the distribution's default profile, untouched
#   docker   Debian's profile with Docker's rule: the four gated on CAP_SYS_NICE, EPERM
#   enosys   the same rule with Debian's ENOSYS for what is not allowed
# The rules under test (docs/cli.md, "Memory policy in containers"): a refused memory policy keeps
# the CPU binding, says so in one warning line per process, exports GPUBIND_MEM_POLICY=refused
# (check names it), and never stops the job; --require-mem-policy makes it an error (125); a
# node with one NUMA node does not call set_mempolicy at all. This VM has one NUMA node, so the
# containers that must reach set_mempolicy see /sys/devices/system/node/online say "0-1": node 0
# is real, the kernel applies or the profile refuses the call for real, and /proc/self/numa_maps
# shows which.
# Usage: container_seccomp.sh GPUBIND
set -u
. "$(dirname "$0")/lib.sh"
command -v podman >/dev/null || skip "podman not installed (scripts/install-deps.sh installs it)"
command -v crun >/dev/null || skip "crun not installed (scripts/install-deps.sh installs it)"
profile=/usr/share/containers/seccomp.json
[ -r "$profile" ] || skip "$profile (golang-github-containers-common) not found"
[ -d /sys/devices/system/node/node0 ] || skip "this kernel has no NUMA support (no /sys/devices/system/node/node0)"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: local rank 1 of 2 is bound to the second"
private_mounts "$@" || skip "podman's state and the cgroup mounts it needs are kept in a mount namespace of this test's own (root and unshare -m)"
# crun refuses a "hybrid" host, cgroup v1 beside a cgroup2 mount with controllers (this VM's
# /sys/fs/cgroup/unified holds hugetlb); without that mount, in this namespace only, it is plain v1.
if grep -q ' /sys/fs/cgroup/unified cgroup2 ' /proc/mounts && [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
  umount /sys/fs/cgroup/unified || skip "cannot unmount /sys/fs/cgroup/unified in this namespace (crun refuses hybrid cgroups)"
fi

bin_dir=$(cd "$(dirname "$GPUBIND")" && pwd)
rootfs=$WORK/rootfs
mkdir -p "$rootfs"/{usr,proc,sys,dev,etc,tmp,run,gpubind,var/run}
for l in bin lib lib64 sbin; do [ -e "/$l" ] && ln -s "usr/$l" "$rootfs/$l"; done
echo 0-1 >"$WORK/two-nodes"

# Debian's profile with Docker's and containerd's rule for the NUMA memory-policy syscalls.
docker_rule() {
  /usr/bin/python3 - "$profile" "$1" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
gated = {"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"}
for s in p["syscalls"]:
    if s.get("action") == "SCMP_ACT_ALLOW" and not s.get("includes"):
        s["names"] = [n for n in s["names"] if n not in gated]
p["syscalls"].append({"names": sorted(gated), "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_NICE"]}})
p["defaultErrnoRet"] = int(sys.argv[2])
p["defaultErrno"] = {1: "EPERM", 38: "ENOSYS"}[int(sys.argv[2])]
json.dump(p, sys.stdout)
EOF
}
docker_rule 1 >"$WORK/docker.json" && docker_rule 38 >"$WORK/enosys.json" || skip "could not derive the profiles from $profile"

# in_container PROFILE NODES [podman options...] -- COMMAND...: COMMAND in a fresh container,
# stdout to $WORK/out, stderr to $WORK/err; returns its exit status. PROFILE: debian, docker or
# enosys; NODES: "real" or "two" (node/online says 0-1).
in_container() {
  local prof=$1 nodes=$2 opts=()
  shift 2
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  [ "$prof" = debian ] || opts+=(--security-opt "seccomp=$WORK/$prof.json")
  [ "$nodes" = two ] && opts+=(-v "$WORK/two-nodes:/sys/devices/system/node/online:ro")
  podman --root "$WORK/storage" --runroot "$WORK/runroot" --tmpdir "$WORK/libpod" --storage-driver vfs --cgroup-manager=cgroupfs \
    --events-backend=none run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
    -v /usr:/usr:ro -v "$bin_dir:/gpubind:ro" -e GPUBIND_CACHE_DIR=/tmp/cache "${opts[@]}" --rootfs "$rootfs" \
    "$@" >"$WORK/out" 2>"$WORK/err"
}
show() { sed 's/^/    | /' "$WORK/out" "$WORK/err"; }
count() { grep -c "$1" "$WORK/${2:-err}"; }

# The probe: what the bound process has (its variables, allowed CPUs, and the memory policy the
# kernel reports for its first mapping: "prefer:0" once applied, "default" otherwise).
probe='echo policy=$GPUBIND_MEM_POLICY cpus=$GPUBIND_CPUS; grep Cpus_allowed_list /proc/self/status; echo kernel=$(head -1 /proc/self/numa_maps | cut -d" " -f2)'
exec_r1=(/gpubind/gpubind exec --local-rank 1 --local-size 2 --report-bindings --)

in_container debian two -- sh -c 'grep -E "^Seccomp:" /proc/self/status; cat /sys/devices/system/node/online' ||
  skip "podman cannot run a container here: $(tr '\n' ' ' <"$WORK/err")"
grep -q 'Seccomp:[[:space:]]*2' "$WORK/out" || skip "the container runs without a seccomp filter ($(tr '\n' ' ' <"$WORK/out"))"
grep -qx 0-1 "$WORK/out" || fail "the container does not see node/online as 0-1: $(tr '\n' ' ' <"$WORK/out")"
echo "containers run (podman $(podman --version | awk '{print $3}'), crun, seccomp filter on)"

# 1. Debian's own profile allows the call: everything applied, nothing said.
if in_container debian two -- "${exec_r1[@]}" sh -c "$probe" && grep -q policy=preferred "$WORK/out" &&
  grep -q 'Cpus_allowed_list:[[:space:]]*1$' "$WORK/out" && grep -q kernel=prefer:0 "$WORK/out" && [ "$(count 'warning: .*memory')" = 0 ]; then
  pass "debian profile: CPUs 1 and memory preferred 0 applied, no warning"
else
  fail "debian profile: expected CPUs 1, policy preferred, prefer:0 and no warning"; show
fi

# 2, 3. Docker's rule (EPERM) and the same with ENOSYS: CPUs kept, one warning, the job runs.
for prof in docker enosys; do
  if in_container "$prof" two -- "${exec_r1[@]}" sh -c "$probe" && grep -q policy=refused "$WORK/out" &&
    grep -q 'Cpus_allowed_list:[[:space:]]*1$' "$WORK/out" && grep -q kernel=default "$WORK/out" &&
    [ "$(count 'gpubind: warning: .*memory policy refused by the container')" = 1 ] && [ "$(count '^gpubind: error')" = 0 ] &&
    grep -q 'bound to .*memory preferred 0 refused by the container' "$WORK/err"; then
    pass "$prof rule without CAP_SYS_NICE: CPUs 1 kept, memory refused in one warning and in --report-bindings, command ran"
  else
    fail "$prof rule without CAP_SYS_NICE: expected exit 0, CPUs 1, GPUBIND_MEM_POLICY=refused, one warning"; show
  fi
done
sed -n 's/^/    | /p' "$WORK/err"

# 4. The same rule with CAP_SYS_NICE: applied.
if in_container docker two --cap-add SYS_NICE -- "${exec_r1[@]}" sh -c "$probe" && grep -q policy=preferred "$WORK/out" &&
  grep -q kernel=prefer:0 "$WORK/out" && [ "$(count 'warning: .*memory')" = 0 ]; then
  pass "docker rule with CAP_SYS_NICE: memory preferred 0 applied"
else
  fail "docker rule with CAP_SYS_NICE: expected the policy applied"; show
fi

# 5. --require-mem-policy: an error, the binding undone, the command not run.
in_container docker two -- /gpubind/gpubind exec -q --local-rank 1 --local-size 2 --require-mem-policy -- sh -c 'echo ran'
rc=$?
if [ $rc = 125 ] && ! grep -q ran "$WORK/out" && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q '^gpubind: error: .*set_mempolicy' "$WORK/err"; then
  pass "--require-mem-policy: exit 125 in one error line, command not run"
else
  fail "--require-mem-policy: expected exit 125, one error line and no command (rc $rc)"; show
fi

# 6. launch -n 2: both ranks run, one warning each.
if in_container docker two -- /gpubind/gpubind launch -n 2 -- sh -c 'echo rank=$GPUBIND_LOCAL_RANK policy=$GPUBIND_MEM_POLICY cpus=$GPUBIND_CPUS' &&
  [ "$(grep -c policy=refused "$WORK/out")" = 2 ] && [ "$(count 'memory policy refused by the container')" = 2 ]; then
  pass "launch -n 2 under the docker rule: both ranks ran, one warning each"
else
  fail "launch -n 2 under the docker rule: expected two ranks and two warnings"; show
fi

# 7. One NUMA node (the machine as it is): set_mempolicy is not called, so nothing is refused.
if in_container docker real -- "${exec_r1[@]}" sh -c "$probe" && grep -q policy=preferred "$WORK/out" &&
  grep -q kernel=default "$WORK/out" && grep -q 'Cpus_allowed_list:[[:space:]]*1$' "$WORK/out" && [ "$(count 'warning: .*memory')" = 0 ]; then
  pass "one NUMA node under the docker rule: no set_mempolicy, no warning, CPUs 1"
else
  fail "one NUMA node under the docker rule: expected no call and no warning"; show
fi

# 8. check and watch inside the container name the refusal of a running rank.
if in_container docker two -- sh -c '/gpubind/gpubind exec --local-rank 1 --local-size 2 --quiet -- sleep 60 & pid=$!
  for i in 1 2 3 4 5 6 7 8 9 10; do grep -q GPUBIND_CPUS /proc/$pid/environ 2>/dev/null && break; sleep 1; done
  /gpubind/gpubind check --pid $pid; echo check=$?
  /gpubind/gpubind watch --pid $pid --once --interval 0.2 --no-tty >/dev/null; echo watch=$?; kill $pid'; then
  if grep -q 'PID [0-9]* note: memory policy refused by the container' "$WORK/out" && grep -q check=0 "$WORK/out" &&
    [ "$(count 'gpubind: warning: PID [0-9]* (sleep): memory policy refused by the container')" = 1 ] && grep -q watch=0 "$WORK/out"; then
    pass "check and watch name the refused memory policy of a running rank (exit 0)"
  else
    fail "check and watch: expected the refusal named once each and exit 0"; show
  fi
else
  fail "check and watch in the container did not run"; show
fi

# 9. rebind inside the container (Debian's default profile: sched_setaffinity allowed,
#    migrate_pages refused): the container's own ranks, started unbound, are moved; exit 0. Both
#    must have exec'd sleep first (a forked shell has no LOCAL_RANK yet), whichever is slower.
if in_container debian real -- sh -c 'LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 sleep 60 & a=$!; LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 sleep 60 & b=$!
  for i in $(seq 1 100); do grep -q LOCAL_RANK /proc/$a/environ 2>/dev/null && grep -q LOCAL_RANK /proc/$b/environ 2>/dev/null && break; sleep 0.2; done
  /gpubind/gpubind rebind -q --pid $a --pid $b; echo rebind=$?
  echo "a=$(grep Cpus_allowed_list /proc/$a/status | cut -f2) b=$(grep Cpus_allowed_list /proc/$b/status | cut -f2)"; kill $a $b'; then
  if grep -q rebind=0 "$WORK/out" && grep -Eq '^a=0 b=1$' "$WORK/out" && [ "$(count '^gpubind: error')" = 0 ]; then
    pass "rebind in a container with the default seccomp profile: its ranks moved to CPUs 0 and 1, exit 0"
  else
    fail "rebind in the container: expected exit 0, ranks on 0 and 1"; show
  fi
else
  fail "rebind in the container did not run"; show
fi
# 10. bench (issue 37) under the docker rule, with noise roaming and kept on the reserved CPU
#     (sched_setaffinity on its own noise processes, allowed by every profile): it completes, both
#     placements reported; with two NUMA nodes listed the ranks' memory policy is refused in every
#     one of its 20 rank runs, which keeps their CPUs and is said once, on stderr and in the record.
for nodes in real two; do
  if in_container docker $nodes -- /gpubind/gpubind bench -n 1 --noise 1 --steps 20 --strategies closest,none --json; then
    said=$(count '^gpubind: warning: bench: ranks: memory policy refused by the container (set_mempolicy 0: Operation not permitted): CPUs bound')
    if /usr/bin/python3 - "$WORK/out" $nodes "$said" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
got = [(r["strategy"], r["noise"]) for r in j["results"]]
assert got == [("closest", "roaming"), ("none", "roaming"), ("closest", "reserved"), ("none", "reserved")], got
assert j["config"]["reserved_cpus"] == "0", j["config"]
refused = [w for w in j["warnings"] if "memory policy refused by the container" in w]
assert len(refused) == (1 if sys.argv[2] == "two" else 0), j["warnings"]
assert int(sys.argv[3]) == len(refused), sys.argv[3]
PYEOF
    then pass "bench in a container under the docker rule ($nodes NUMA node list): both noise placements ran, CPU 0 reserved, $said refusal(s) said"
    else fail "bench in the container ($nodes): unexpected record or warnings"; show; fi
  else
    fail "bench in the container ($nodes) failed"; show
  fi
done
# 11. bench --ab under the docker rule, two NUMA nodes listed: closest's ranks' memory policy is
#     refused in each of its runs; bench --ab says it once (its ranks' own lines are read, launch
#     is not --quiet) and keeps it in the record; none sets no memory policy, so nothing of it.
if in_container docker two -- /gpubind/gpubind bench --ab closest,none -n 2 --rounds 2 --json -- sh -c 'exit 0'; then
  said=$(count "^gpubind: warning: bench --ab: closest's ranks: memory policy refused by the container (set_mempolicy 0: Operation not permitted)")
  if [ "$said" = 1 ] && [ "$(count "none's ranks")" = 0 ] && /usr/bin/python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["warnings"]
assert len(w) == 1 and w[0].startswith("closest'"'"'s ranks: memory policy refused by the container"), w' "$WORK/out"; then
    pass "bench --ab under the docker rule: the refused memory policy of closest's ranks said once, and in the record"
  else
    fail "bench --ab under the docker rule: expected one warning for closest (said $said)"; show
  fi
else
  fail "bench --ab in the container failed"; show
fi
# 12. In a Kubernetes pod (issue 56): the DRA device metadata files (KEP-5304) mounted where the
#     kubelet mounts them, one per driver and request, read-only. exec and launch name the GPU the
#     metadata names by PCI address (this machine's topology with two GPUs added, as a file),
#     --explain says they read it, and where the files disagree with the topology (a PCIe root)
#     or the claim gave fewer CPUs than the container may run on, a warning says so. A file that
#     is not JSON is a warning and the job runs.
dra=$WORK/dra
mkdir -p "$dra/resourceclaims/train-0/gpu" "$dra/resourceclaimtemplates/cpus/cpus" "$dra/resourceclaims/train-0/nic"
"$GPUBIND" topo --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)
node = t["numa_nodes"][0]
gpu = {"index": 0, "vendor": "nvidia", "name": "NVIDIA A100-SXM4-40GB", "uuid": "", "pci": "0000:07:00.0", "vendor_id": "0x10de",
       "device_id": "0x20b0", "class_id": "0x0302", "os_names": ["cuda0"], "numa": [node["os_index"]], "cpus": node["cpus"],
       "pcie_path": ["hb:0000:02", "0000:02:00.0"], "memory_numa": []}
t["gpus"] = [gpu, dict(gpu, index=1, pci="0000:0f:00.0", os_names=["cuda1"])]
json.dump(t, open(sys.argv[1], "w"))' "$WORK/pod-topo.json" || fail "could not write this machine's topology with GPUs"
cat >"$dra/resourceclaims/train-0/gpu/gpu.nvidia.com-metadata.json" <<'EOF'
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{"name":"train-0","namespace":"ml","uid":"ca000000-0000-4000-8000-000000000001","generation":1},"requests":[{"name":"gpu","devices":[{"driver":"gpu.nvidia.com","pool":"node-a","name":"gpu-1","attributes":{"resource.kubernetes.io/pciBusID":{"string":"0000:0f:00.0"},"resource.kubernetes.io/pcieRoot":{"string":"pci0000:42"}}}]}]}
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1alpha1","metadata":{"name":"train-0","namespace":"ml"},"requests":[]}
EOF
cat >"$dra/resourceclaimtemplates/cpus/cpus/dra.cpu-metadata.json" <<'EOF'
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{"name":"train-0-cpus-x7k2p","namespace":"ml","uid":"ca000000-0000-4000-8000-000000000002","generation":1},"podClaimName":"cpus","requests":[{"name":"cpus","devices":[{"driver":"dra.cpu","pool":"node-a","name":"cpudevnuma000","attributes":{"dra.cpu/numCPUs":{"int":2},"dra.cpu/allocatedNumCPUs":{"int":1},"resource.kubernetes.io/numaNode":{"int":0},"dra.cpu/socketID":{"int":0}}}]}]}
EOF
printf '{"kind": "DeviceMetadata", ' >"$dra/resourceclaims/train-0/nic/dra.net-metadata.json"
pod=(-v "$dra:/var/run/kubernetes.io/dra-device-attributes:ro" -v "$WORK/pod-topo.json:/pod-topo.json:ro")
if in_container debian real "${pod[@]}" -- sh -c '/gpubind/gpubind exec --topology /pod-topo.json --explain --local-rank 0 --local-size 1 -- sh -c "echo ran"; echo exec=$?
  GPUBIND_TOPOLOGY=/pod-topo.json /gpubind/gpubind launch --explain -n 1 -- sh -c "echo ran"; echo launch=$?'; then
  m=/var/run/kubernetes.io/dra-device-attributes
  if grep -q exec=0 "$WORK/out" && grep -q launch=0 "$WORK/out" && [ "$(grep -c '^ran$' "$WORK/out")" = 2 ] &&
    [ "$(count "^gpubind: explain: $m/resourceclaims/train-0/gpu/gpu.nvidia.com-metadata.json: GPU gpu-1 of gpu.nvidia.com is GPU 1 (0000:0f:00.0, by its PCI address")" = 2 ] &&
    [ "$(count "^gpubind: explain: the pod's DRA metadata: the container's GPUs are 1 (0000:0f:00.0)")" = 2 ] &&
    [ "$(count "^gpubind: warning: $m/resourceclaims/train-0/gpu/gpu.nvidia.com-metadata.json puts GPU 0000:0f:00.0 under PCIe root pci0000:42, the topology under pci0000:02")" = 2 ] &&
    [ "$(count "^gpubind: warning: $m/resourceclaimtemplates/cpus/cpus/dra.cpu-metadata.json: the claim was given 1 CPU, this process may run on 2")" = 2 ] &&
    [ "$(count "^gpubind: warning: DRA device metadata: $m/resourceclaims/train-0/nic/dra.net-metadata.json: not a stream of JSON objects: not used")" = 2 ]; then
    pass "in a pod: exec and launch name the GPU the DRA metadata names, --explain says so, disagreements and a broken file are warnings"
  else
    fail "in a pod: expected the metadata's GPU explained and three warnings from exec and launch each"; show
  fi
else
  fail "exec and launch in the pod container did not run"; show
fi
finish
