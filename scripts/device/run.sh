#!/usr/bin/env bash
# One device call (prepare.sh first; carry .gpu): raw NVML answers, a process holding a CUDA context
# checked and watched, then shared/device/gpu-verify.sh; everything comes back as $OUT/gv.tgz.
set -u
D=$PWD/.gpu; W=/tmp/gv; mkdir -p $W
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
G=$D/bin/gpubind; export GPUBIND=$G
CUDART=$(find / -xdev \( -name 'libcudart.so.13*' -o -name 'libcudart.so.12*' \) 2>/dev/null | head -1)
export GPUBIND_CUDA_RUNTIME=$CUDART
{ echo "cudart=$CUDART"; $G --version; ldconfig -p | grep -E 'nvidia-ml|cudart|hwloc|udev'; cat /etc/os-release; } >$W/env.txt 2>&1
timeout 60 python3 $D/nvml-probe.py >$W/nvml-raw.txt 2>&1
{ ls -l /dev/nvidia* /dev/nvidia-caps 2>&1; ps -eo pid,user,comm,args | grep -iE 'nvidia|dcgm' | grep -v grep;
  for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep -q /dev/nvidia && echo "holder $(basename $p) $(cat $p/comm)"; done
  cat /proc/driver/nvidia/gpus/*/information; cat /proc/driver/nvidia/version; } >$W/devfiles.txt 2>&1
rm -f /tmp/ready
python3 -c 'import torch,time; x=torch.ones(1<<28, device="cuda"); torch.cuda.synchronize(); open("/tmp/ready","w").close(); time.sleep(60)' >$W/holder.txt 2>&1 & HP=$!
for i in $(seq 120); do [ -e /tmp/ready ] && break; sleep 0.5; done
{ echo "holder pid $HP ready=$([ -e /tmp/ready ] && echo yes)"
  for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep /dev/nvidia | sed "s|^|$(basename $p) |"; done | head -20
  echo "--- check --pid"; $G check --pid $HP; echo "rc=$?"
  echo "--- check --all-gpu-procs"; $G check --all-gpu-procs; echo "rc=$?"
  echo "--- check --all-gpu-procs --no-gpu-runtime"; $G check --all-gpu-procs --no-gpu-runtime; echo "rc=$?"
  echo "--- check --json"; $G check --pid $HP --json; echo "rc=$?"
  echo "--- watch 2 s"; timeout 20 $G watch --pid $HP --duration 2 --interval 1; echo "rc=$?"
} >$W/check-cuda.txt 2>&1
timeout 60 python3 $D/nvml-probe.py >$W/nvml-raw-with-holder.txt 2>&1
kill $HP 2>/dev/null; wait $HP 2>/dev/null
OUT=$W/verify timeout 330 bash $D/gpu-verify.sh >$W/verify.log 2>&1; echo "verify rc=$?" >>$W/verify.log
tar czf $OUT/gv.tgz -C /tmp gv
cat $W/nvml-raw.txt | head -40; tail -5 $W/verify.log; grep -E "rc=|^---|Finding|OK|UNBOUND|NO_GPU" $W/check-cuda.txt | head -20
