#!/usr/bin/env bash
# k8s check asks the kubelet's pod-resources API (gRPC on its unix socket) where the socket exists:
# a fake kubelet (tests/fakes/fake_kubelet.cpp) answers from a JSON file, through the real gRPC
# client module (gpubind-podresources.so). Its answer replaces the checkpoint files' assignments;
# --no-pod-resources reads the checkpoints only; a socket nobody answers on, or a failing call, is
# a note and the checkpoints' assignments.
# Usage: k8s_pod_resources.sh GPUBIND FAKE_KUBELET
set -u
. "$(dirname "$0")/lib.sh"
FAKE=${2:?usage: $0 GPUBIND FAKE_KUBELET}
here=$(cd "$(dirname "$0")/../.." && pwd)
fake_nvml="$(dirname "$GPUBIND")/../tests/fake-nvml"
[ -e "$fake_nvml/libnvidia-ml.so.1" ] || skip "the fake NVML was not built ($fake_nvml)"
command -v /usr/bin/python3 >/dev/null || skip "no /usr/bin/python3"
node="$WORK/node"
cp -r "$here/tests/data/k8s/misaligned" "$node"
mkdir -p "$node/var/lib/kubelet/pod-resources"
sock="$node/var/lib/kubelet/pod-resources/kubelet.sock"

check() {  # check [GPUBIND ARGS...]: k8s check --json of the node, into $WORK/out.json; its status in $rc
  LD_LIBRARY_PATH="$fake_nvml" GPUBIND_FAKE_NVML="$here/tests/data/nvml/dgx-h100-mig.json" \
    "$GPUBIND" k8s check --root "$node" --topology example:dgx-h100 --gpu-runtime --json "$@" >"$WORK/out.json" 2>"$WORK/err"
  rc=$?
}
field() {  # field PYTHON_EXPRESSION over the report r, and c (containers by "namespace/pod container")
  /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
c = {x["namespace"] + "/" + x["pod"] + " " + x["container"]: x for x in r["containers"]}
print(eval(sys.argv[2]))' "$WORK/out.json" "$1" 2>&1
}

serve() {  # serve TREE ANSWER LABEL: the node afresh from tests/data/k8s/TREE, a fake kubelet answering pod-resources/ANSWER
  rm -rf "$node" "$sock"
  cp -r "$here/tests/data/k8s/$1" "$node"
  mkdir -p "$node/var/lib/kubelet/pod-resources"
  "$FAKE" "$sock" "$here/tests/data/k8s/pod-resources/$2" 2>"$WORK/fake.err" &
  fake=$!
  wait_until 10 test -S "$sock" || fail "the fake kubelet ($3) did not listen"
}

"$FAKE" "$sock" "$here/tests/data/k8s/pod-resources/misaligned-now.json" 2>"$WORK/fake.err" &
fake=$!
wait_until 10 test -S "$sock" || { cat "$WORK/fake.err"; fail "the fake kubelet did not listen on $sock"; finish; }

check
[ "$(field 'r["state"]["assignments_from"]')" = "the pod-resources API" ] && pass "the API's answer is used" \
  || fail "assignments from: $(field 'r["state"]["assignments_from"]') $(cat "$WORK/err")"
[ "$(field 'c["ml/llm-0 worker"]["verdict"], c["ml/llm-0 worker"]["cpus"], c["ml/llm-0 worker"]["memory_numa"]')" = "('ALIGNED', '57-64,169-176', [1])" ] \
  && pass "the API's CPUs and memory for ml/llm-0 (now on its GPUs' node): ALIGNED" || fail "llm-0: $(field 'c.get("ml/llm-0 worker")')"
[ "$(field 'c["ml/fresh-0 worker"]["pod_uid"], c["ml/fresh-0 worker"]["gpus"][0]["pci"], c["ml/fresh-0 worker"]["verdict"]')" = "('ml/fresh-0', '0000:3a:00.0', 'CROSS_NUMA')" ] \
  && pass "a pod only the API knows (no log directory): named, its GPU matched by UUID, its memory off the GPU's node" \
  || fail "fresh-0: $(field 'c.get("ml/fresh-0 worker")')"
[ "$(field 'sorted(c)')" = "['ml/fresh-0 worker', 'ml/llm-0 worker']" ] && pass "only the containers the API gives GPUs are judged" \
  || fail "containers: $(field 'sorted(c)')"
[ "$(field '[d["resource"] for d in c["ml/llm-0 worker"]["other_devices"]]')" = "['rdma/hca']" ] && pass "other devices listed (rdma/hca)" \
  || fail "other devices: $(field 'c["ml/llm-0 worker"]["other_devices"]')"
[ $rc = 3 ] && pass "exit 3: fresh-0 is misaligned" || fail "exit $rc"

check --no-pod-resources
[ "$(field 'r["state"]["assignments_from"], c["ml/llm-0 worker"]["verdict"]')" = "('the checkpoint files', 'CROSS_NUMA')" ] \
  && pass "--no-pod-resources: the checkpoint files' assignments" || fail "--no-pod-resources: $(field 'r["state"]')"

kill "$fake"; wait "$fake" 2>/dev/null
check
[ "$(field 'r["state"]["assignments_from"]')" = "the checkpoint files" ] && field 'r["notes"]' | grep -q "pod-resources API did not answer" \
  && pass "a socket nobody answers on: a note, and the checkpoint files" || fail "dead socket: $(field 'r["state"], r["notes"]') $(cat "$WORK/err")"

rm -f "$sock"
"$FAKE" "$sock" "$here/tests/data/k8s/pod-resources/misaligned-now.json" --fail 14 2>"$WORK/fake.err" &
fake=$!
wait_until 10 test -S "$sock" || fail "the failing fake kubelet did not listen"
check
field 'r["notes"]' | grep -q "List: 14 the fake kubelet was told to fail" && [ "$(field 'r["state"]["assignments_from"]')" = "the checkpoint files" ] \
  && pass "a failing call (UNAVAILABLE): its status in the note, and the checkpoint files" || fail "failing call: $(field 'r["notes"]')"
kill "$fake"; wait "$fake" 2>/dev/null

# Dynamic Resource Allocation (issue 32): the API's dynamic_resources give each container its
# claims' devices, named in the driver's pool ("gpu-5"); judged like device-plugin GPUs, with the
# Topology Manager's blind spot said. The node's checkpoint files are tests/data/k8s/dra's.
serve dra dra.json DRA
check
[ "$(field 'c["ml/infer-0 server"]["verdict"], c["ml/infer-0 server"]["gpus"][0]["claim"], c["ml/infer-0 server"]["gpus"][0]["pci"]')" = \
  "('CROSS_NUMA', 'ml/infer-0-gpu', '0000:ab:00.0')" ] && pass "DRA: ml/infer-0's claimed gpu-5 (0000:ab:00.0, node 1) with CPUs on node 0: CROSS_NUMA" \
  || fail "DRA infer-0: $(field 'c.get("ml/infer-0 server")') $(cat "$WORK/err")"
[ "$(field 'c["ml/train-0 worker"]["verdict"], sorted(c)')" = "('ALIGNED', ['ml/infer-0 server', 'ml/train-0 worker'])" ] \
  && pass "DRA: ml/train-0's gpu-1 on its CPUs' node: ALIGNED; the sidecar's RDMA device alone is not judged" \
  || fail "DRA train-0: $(field 'sorted(c)')"
field '[f["text"] for f in r["findings"]]' | grep -q "Topology Manager does not align DRA devices" \
  && pass "DRA: the report says the Topology Manager does not align DRA devices" || fail "DRA advice: $(field 'r["findings"]')"
[ $rc = 3 ] && pass "DRA: exit 3 (infer-0 misaligned)" || fail "DRA: exit $rc"
kill "$fake"; wait "$fake" 2>/dev/null

# The CPU DRA driver (issue 56): the API names each container's dra.cpu claim (its CDI id holds
# the claim's UID, whose CDI spec holds its CPUs), and the container's cgroup is what it runs on.
# The node is tests/data/k8s/dra-cpu: cpuManagerPolicy none, the driver's plugin registered.
serve dra-cpu dra-cpu.json dra.cpu
"$GPUBIND" k8s check --root "$node" --topology example:dgx-a100-nps4 --json >"$WORK/out.json" 2>"$WORK/err"
rc=$?
[ "$(field 'r["state"]["assignments_from"], c["ml/train-0 trainer"]["verdict"], c["ml/train-0 trainer"]["cpus_source"]')" = \
  "('the pod-resources API', 'ALIGNED', 'cgroup')" ] && pass "dra.cpu through the API: train-0's trainer judged by its cgroup, ALIGNED" \
  || fail "dra.cpu train-0: $(field 'c.get("ml/train-0 trainer")') $(cat "$WORK/err")"
[ "$(field 'c["ml/train-3 trainer"]["verdicts"], c["ml/train-3 trainer"]["given_cpus"]')" = "(['CROSS_NUMA', 'SHARED_CPUS'], '80-87,208-215')" ] \
  && pass "dra.cpu through the API: train-3's cgroup wider than its claim (80-87,208-215): SHARED_CPUS, CROSS_NUMA" \
  || fail "dra.cpu train-3: $(field 'c.get("ml/train-3 trainer")')"
[ "$(field 'c["ml/infer-1 server"]["verdict"], c["ml/train-2 trainer"]["verdict"], c["ml/train-1 trainer"]["verdict"]')" = \
  "('NO_EXCLUSIVE_CPUS', 'REMOTE_NIC', 'CROSS_NUMA')" ] && pass "dra.cpu through the API: no claim, a NIC off the GPU's node, a socket group's CPUs off it" \
  || fail "dra.cpu verdicts: $(field '{k: v["verdicts"] for k, v in c.items()}')"
field '[f["text"] for f in r["findings"]]' | grep -q "cpuManagerPolicy is none" \
  && fail "dra.cpu: cpuManagerPolicy none advised against on a CPU DRA driver node" || pass "dra.cpu: no advice against cpuManagerPolicy none"
[ $rc = 3 ] && pass "dra.cpu: exit 3" || fail "dra.cpu: exit $rc"
kill "$fake"; wait "$fake" 2>/dev/null
finish
