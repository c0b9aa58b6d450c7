# What the slurm-new scripts share (sourced after RELEASE is set): the release's root, a skip with
# the command to run where it is absent, and ok/FAIL lines counted in `failures`.
ROOTFS=${GPUBIND_SLURM_CACHE:-/var/cache/gpubind/slurm}/$RELEASE
skip() { echo "skipped: $*"; exit 77; }
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
failures=0
# need_release WHY_ROOT: skips unless run as root and the release's root was made.
need_release() {
  [ "$(id -u)" = 0 ] || skip "needs root ($1)"
  [ -x "$ROOTFS/usr/sbin/slurmd" ] || skip "Slurm $RELEASE not made, run scripts/slurm-release.sh $RELEASE"
}
