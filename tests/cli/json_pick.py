"""Prints part of a JSON document read from stdin, for CLI cases whose golden needs only that part
(a case line cannot hold Python: CMake splits it at semicolons).
Usage: ... | json_pick.py PATH [KEY...]
PATH is dot-separated keys and list indices ("gpu_runtime.0.gpus.0"); with KEYs, only those keys
of the object at PATH are printed."""
import json
import sys

node = json.load(sys.stdin)
for part in sys.argv[1].split("."):
    node = node[int(part)] if isinstance(node, list) else node[part]
if len(sys.argv) > 2:
    node = {k: node[k] for k in sys.argv[2:]}
print(json.dumps(node, indent=1))
