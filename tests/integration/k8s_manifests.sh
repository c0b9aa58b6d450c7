#!/usr/bin/env bash
# deploy/kubernetes: every manifest parses in a real YAML parser (PyYAML) and holds what gpubind
# relies on; the commands in them are accepted by the built gpubind (the training job's launch
# line runs a stand-in train.py; the kubelet snippet is read by k8s check and judged sound); the
# Prometheus scrape config passes promtool. No API server can run here, so nothing is applied.
set -u
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "PyYAML is not installed (Debian package python3-yaml)"
exec /usr/bin/python3 "$(dirname "$0")/k8s_manifests.py" "$GPUBIND" "$(cd "$(dirname "$0")/../../deploy/kubernetes" && pwd)" "$WORK"
