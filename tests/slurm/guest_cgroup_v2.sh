#!/bin/sh
# In the qemu VM (tests/slurm/cgroup_v2_test.sh): cgroup v2's controllers for Slurm's cgroups, the
# network (an address besides the loopback: the dummy module given) and host name the cluster's
# files name, the release's root mounted and run by chroot;
# then each of the cluster's outputs under its own ===NAME line.
R=/slurmroot T=/mnt/gpubind-test
host=$(cat $R$T/hostname)
hostname "$host"
echo "127.0.0.1 localhost $host" > $R/etc/hosts
ip link set lo up
insmod "$1"  # makes dummy0
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy
ip addr add 10.99.0.1/24 dev dummy0 && ip link set dummy0 up
echo "+cpuset +cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
mount -t proc proc $R/proc
mount --rbind /sys $R/sys
mount --rbind /dev $R/dev
mkdir -p $R/tmp $R/run && mount -t tmpfs tmpfs $R/tmp
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin timeout 150 chroot $R /bin/bash -x $T/inner.sh > $R$T/inner.out 2>&1; echo "inner.sh: exit $?" >> $R$T/inner.out
for f in nodes.txt per_task.out holder.job beside.out steps.out inner.out; do echo "===$f"; cat $R$T/$f 2>&1; done
echo "===slurmd.log"; tail -40 $R$T/log/slurmd-n1.log 2>&1
echo "===slurmctld.log"; tail -20 $R$T/log/slurmctld.log 2>&1
exit 0
