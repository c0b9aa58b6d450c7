"""The checks of k8s_manifests.sh: deploy/kubernetes/*.yaml read by PyYAML, their fields checked
against what gpubind and the kubelet need, their gpubind commands run or parsed by the real
binary, the scrape config checked by promtool. One ok/FAIL line per check."""
import os
import re
import shutil
import subprocess
import sys

import yaml

gpubind, deploy, work = sys.argv[1:4]
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok or not detail else f" ({detail})"))
    failures += 0 if ok else 1


def docs(name):
    with open(os.path.join(deploy, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def whole_cpus(q):
    """A Kubernetes cpu quantity that is a whole number of CPUs (the static CPU manager's condition)."""
    return isinstance(q, int) or (isinstance(q, str) and re.fullmatch(r"[1-9][0-9]*", q) is not None)


def help_flags(*command):
    out = subprocess.run([gpubind, *command, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"--[a-z][-a-z_]*", out))


# Every file parses.
names = sorted(n for n in os.listdir(deploy) if n.endswith(".yaml"))
check(names == ["kubelet-single-numa-node.yaml", "prometheus-scrape.yaml", "training-job.yaml", "watch-daemonset.yaml"],
      "deploy/kubernetes holds the four manifests", str(names))
for n in names:
    try:
        docs(n)
        check(True, f"{n} parses")
    except yaml.YAMLError as e:
        check(False, f"{n} parses", str(e).replace("\n", " "))

# The kubelet snippet: the policies that align GPU pods, read back by gpubind's own reader.
(kubelet,) = docs("kubelet-single-numa-node.yaml")
check(kubelet.get("kind") == "KubeletConfiguration" and kubelet.get("apiVersion") == "kubelet.config.k8s.io/v1beta1",
      "kubelet snippet: a KubeletConfiguration", str(kubelet.get("kind")))
check(kubelet.get("cpuManagerPolicy") == "static", "kubelet snippet: cpuManagerPolicy static")
check(kubelet.get("topologyManagerPolicy") == "single-numa-node", "kubelet snippet: topologyManagerPolicy single-numa-node")
check(kubelet.get("cpuManagerPolicyOptions", {}).get("full-pcpus-only") == "true",
      "kubelet snippet: full-pcpus-only is the string \"true\" (the kubelet's options are strings)")
root = os.path.join(work, "node")
os.makedirs(os.path.join(root, "var/lib/kubelet"))
shutil.copy(os.path.join(deploy, "kubelet-single-numa-node.yaml"), os.path.join(root, "var/lib/kubelet/config.yaml"))
r = subprocess.run([gpubind, "k8s", "check", "--root", root, "--topology", "example:dgx-h100", "--json"], capture_output=True, text=True)
import json  # noqa: E402 (only here)
try:
    report = json.loads(r.stdout)
except ValueError:
    report = {}
k = report.get("kubelet", {})
check(r.returncode == 0 and k.get("cpu_manager_policy") == "static" and k.get("topology_manager_policy") == "single-numa-node"
      and k.get("reserved_system_cpus") == "0,112",
      "gpubind k8s check reads the snippet: static, single-numa-node, reservedSystemCPUs 0,112", f"rc {r.returncode}: {r.stdout[:300]}{r.stderr[:300]}")
check(report.get("findings") == [], "gpubind k8s check finds nothing to advise in the snippet on a DGX H100",
      str(report.get("findings")))
reserved = set(int(c) for c in kubelet["reservedSystemCPUs"].split(","))
check(reserved == {0, 112}, "kubelet snippet: reservedSystemCPUs is one whole core of the DGX H100 (CPU 0 and its sibling 112)")

# The training job: Guaranteed with whole CPUs and GPUs, started by gpubind launch.
(job,) = docs("training-job.yaml")
check(job.get("kind") == "Job" and job.get("apiVersion") == "batch/v1", "training job: a batch/v1 Job")
spec = job["spec"]["template"]["spec"]
(c,) = spec["containers"]
req, lim = c["resources"].get("requests", {}), c["resources"].get("limits", {})
check(lim.get("nvidia.com/gpu", 0) > 0 and isinstance(lim["nvidia.com/gpu"], int), "training job: GPUs in resources.limits",
      str(lim))
check(req == lim, "training job: requests equal limits (Guaranteed QoS, which the static CPU manager needs)", f"{req} != {lim}")
check(whole_cpus(lim.get("cpu")), "training job: a whole number of CPUs (exclusive cores from the static CPU manager)",
      str(lim.get("cpu")))
cmd = c.get("command", []) + c.get("args", [])
check(cmd[:2] == ["gpubind", "launch"], "training job: the entrypoint is gpubind launch", str(cmd))
nproc = cmd[cmd.index("--nproc-per-node") + 1] if "--nproc-per-node" in cmd else None
check(nproc == "gpu" or nproc == str(lim.get("nvidia.com/gpu")), "training job: one rank per GPU the pod is given", str(nproc))
flags = help_flags("launch")
unknown = [a for a in cmd[2:] if a.startswith("--") and a not in flags and cmd.index(a) < cmd.index("train.py")]
check(not unknown, "training job: every launch flag is one gpubind launch has", str(unknown))
mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
check("/dev/shm" in mounts, "training job: /dev/shm large enough for NCCL's shared-memory transport")
# Its launch line, run here: one rank (this machine has no GPU) of a stand-in train.py.
with open(os.path.join(work, "train.py"), "w") as f:
    f.write("import os, sys\nprint('rank', os.environ['LOCAL_RANK'], 'cpus', os.environ.get('GPUBIND_CPUS'), 'args', sys.argv[1:])\n")
line = [gpubind] + cmd[1:]
line[line.index("--nproc-per-node") + 1] = "1"
line[line.index("--log-dir") + 1] = os.path.join(work, "logs")
r = subprocess.run(line, cwd=work, capture_output=True, text=True, timeout=120)
logs = ""
for dirpath, _, files in os.walk(os.path.join(work, "logs")):
    for fn in files:
        if fn == "stdout.log":
            logs += open(os.path.join(dirpath, fn)).read()
check(r.returncode == 0 and "rank 0 cpus" in logs and "'--epochs', '10'" in logs,
      "training job: its gpubind launch line runs (one rank here) and passes the script its arguments",
      f"rc {r.returncode}: {r.stderr[-300:]} logs: {logs[-200:]}")

# The watch DaemonSet, its Service and ServiceMonitor: one port from --listen to the scrape.
objs = {d["kind"]: d for d in docs("watch-daemonset.yaml")}
check(sorted(objs) == ["DaemonSet", "Namespace", "Service", "ServiceMonitor"], "watch: Namespace, DaemonSet, Service, ServiceMonitor",
      str(sorted(objs)))
pod = objs["DaemonSet"]["spec"]["template"]
ps = pod["spec"]
(w,) = ps["containers"]
check(ps.get("hostPID") is True, "watch: hostPID (it reads the node's /proc)")
wcmd = w.get("command", []) + w.get("args", [])
check(wcmd[:2] == ["gpubind", "watch"], "watch: the entrypoint is gpubind watch", str(wcmd))
wflags = help_flags("watch")
check(all(a in wflags for a in wcmd if a.startswith("--")), "watch: every flag is one gpubind watch has",
      str([a for a in wcmd if a.startswith("--") and a not in wflags]))
listen = wcmd[wcmd.index("--listen") + 1] if "--listen" in wcmd else ""
lport = int(listen.rsplit(":", 1)[-1]) if listen else None
check(listen.startswith("0.0.0.0:"), "watch: listens on every address (Prometheus is another pod)", listen)
# The port is nobody else's on a GPU node: dcgm-exporter's 9400 made the unit fail and restart every
# 10 s; 9100-9999 is Prometheus' (full) exporter list; 29400 and 29500 are PyTorch's rendezvous
# and master ports; Linux gives 32768-60999 to outgoing connections. The systemd unit and the
# bare-metal scrape example use the same one.
check(lport is not None and not 9100 <= lport <= 9999 and lport not in (29400, 29500) and not 32768 <= lport <= 60999,
      "watch: its port is outside the exporter list, PyTorch's and the ephemeral range", str(lport))
unit = open(os.path.join(deploy, "..", "systemd", "gpubind-watch.service")).read()
example = open(os.path.join(deploy, "..", "prometheus", "prometheus.example.yml")).read()
check(f"--listen 0.0.0.0:{lport}" in unit and f":{lport}" in example, "watch: the systemd unit and the scrape example use the same port",
      str(lport))
env = {e["name"]: e for e in w.get("env", [])}
check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
      "watch: NODE_NAME from the downward API (a pod's hostname is the pod's name)")
vols = {v["name"]: v for v in ps.get("volumes", [])}
logs = [m for m in w.get("volumeMounts", []) if m["mountPath"] == "/var/log/containers"]
check(len(logs) == 1 and logs[0].get("readOnly") and vols[logs[0]["name"]].get("hostPath", {}).get("path") == "/var/log/containers",
      "watch: the node's /var/log/containers mounted read-only (the ranks' k8s_pod labels)")
ports = {p.get("name"): p["containerPort"] for p in w.get("ports", [])}
check(ports.get("metrics") == lport, "watch: the container port named metrics is --listen's", f"{ports} vs {lport}")
probe = w.get("readinessProbe", {}).get("httpGet", {})
check(probe.get("path") == "/healthz" and probe.get("port") in ("metrics", lport), "watch: the readiness probe asks /healthz on that port",
      str(probe))
check(set(objs["DaemonSet"]["spec"]["selector"]["matchLabels"].items()) <= set(pod["metadata"]["labels"].items()),
      "watch: the DaemonSet's selector matches its pods")
svc = objs["Service"]["spec"]
sport = {p["name"]: p for p in svc["ports"]}
check(set(svc["selector"].items()) <= set(pod["metadata"]["labels"].items()), "watch: the Service selects the watch pods")
check("metrics" in sport and sport["metrics"].get("targetPort") in ("metrics", lport), "watch: the Service's metrics port targets it",
      str(svc["ports"]))
sm = objs["ServiceMonitor"]["spec"]
check(set(sm["selector"]["matchLabels"].items()) <= set(objs["Service"]["metadata"]["labels"].items()),
      "watch: the ServiceMonitor selects the Service")
check(any(e.get("port") == "metrics" and e.get("path", "/metrics") == "/metrics" for e in sm["endpoints"]),
      "watch: the ServiceMonitor scrapes /metrics on the metrics port", str(sm["endpoints"]))
same_ns = {d["metadata"].get("namespace") for k, d in objs.items() if k != "Namespace"} == {objs["Namespace"]["metadata"]["name"]}
check(same_ns, "watch: every object in the gpubind namespace")

# The scrape config without the operator: promtool accepts it, and it resolves the Service.
(prom,) = docs("prometheus-scrape.yaml")
sd = prom["scrape_configs"][0]["dns_sd_configs"][0]
svc_dns = f"{objs['Service']['metadata']['name']}.{objs['Service']['metadata']['namespace']}.svc.cluster.local"
check(sd["names"] == [svc_dns] and sd["port"] == lport, "prometheus-scrape: the headless Service's name and watch's port",
      f"{sd} vs {svc_dns}:{lport}")
if shutil.which("promtool"):
    r = subprocess.run(["promtool", "check", "config", os.path.join(deploy, "prometheus-scrape.yaml")], capture_output=True, text=True)
    check(r.returncode == 0, "prometheus-scrape: promtool check config", (r.stdout + r.stderr)[-300:])
else:
    print("SKIP: promtool not found (Debian package prometheus): the scrape config is not checked by it")

print("all passed" if failures == 0 else f"{failures} failure(s)")
sys.exit(1 if failures else 0)
