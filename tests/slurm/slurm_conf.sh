# The slurm.conf lines every throw-away test cluster shares (cluster.sh for Debian 12's Slurm,
# release_cluster.sh for the newer releases): one host, root daemons, munge on its own socket, and
# every file under the cluster's directory as the daemons see it.
#
#   slurm_conf_base CLUSTER_NAME DIR PORT HOST   (sourced; prints the lines)
slurm_conf_base() {
  cat <<CONF
ClusterName=$1
SlurmctldHost=$4(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$3
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$2/munge/munge.sock
StateSaveLocation=$2/state
SlurmdSpoolDir=$2/spool/%n
SlurmctldPidFile=$2/state/slurmctld.pid
SlurmdPidFile=$2/spool/%n/slurmd.pid
SlurmctldLogFile=$2/log/slurmctld.log
SlurmdLogFile=$2/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
# A loaded 2-CPU test machine (the CI runs a VM beside these) can keep slurmctld from answering
# within the default 10 s: srun then fails with "Socket timed out on send/recv operation".
MessageTimeout=60
CONF
}
