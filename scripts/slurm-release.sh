#!/usr/bin/env bash
# Slurm releases newer than Debian 12's 22.05, as Debian packages them, for the slurm-new test
# tier: a root file system of a newer Debian suite with slurmctld, slurmd, the client commands and
# munge installed, and Slurm's headers (libslurm-dev: the SPANK plugin is built against each
# release's spank.h), by mmdebstrap from deb.debian.org, kept in a cache directory outside the
# clone and reused by later runs on this machine. The tier runs those daemons in it by chroot.
#
#   scripts/slurm-release.sh [RELEASE...]   RELEASE: 24.11 (Debian 13 trixie), 26.05 (Debian forky);
#                                           default both. Prints each root's path and `slurmd -V`.
#   GPUBIND_SLURM_CACHE   the cache directory (default /var/cache/gpubind/slurm)
#
# Needs root (mmdebstrap installs packages as root into the tree) and deb.debian.org. Idempotent:
# a root already made is only checked. Slurm 25.11 is in no Debian suite; 26.05 judges a GPU's
# Cores= as 25.11 does (one whole socket or every core: src/interfaces/gres.c at both tags).
set -euo pipefail

cache=${GPUBIND_SLURM_CACHE:-/var/cache/gpubind/slurm}
mirror=${GPUBIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=slurmctld,slurmd,slurm-client,munge,libslurm-dev

suite_of() {
  case $1 in
    24.11) echo trixie ;;
    26.05) echo forky ;;
    *) echo "slurm-release.sh: error: release $1: not one this makes (24.11, 26.05)" >&2; return 2 ;;
  esac
}

make_root() {
  local release=$1 suite root
  suite=$(suite_of "$release") || exit 2
  root=$cache/$release
  if [ -x "$root/usr/sbin/slurmd" ] && [ -f "$root/usr/include/slurm/spank.h" ] && [ -f "$root/.gpubind-slurm" ]; then
    echo "$root: $(cat "$root/.gpubind-slurm")"
    return 0
  fi
  [ "$(id -u)" = 0 ] || { echo "slurm-release.sh: error: $root: making it needs root (mmdebstrap installs packages into it)" >&2; exit 1; }
  command -v mmdebstrap >/dev/null || { echo "slurm-release.sh: error: mmdebstrap is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
  mkdir -p "$cache"
  rm -rf "$root.tmp"
  # A moving suite's Release file may be older than its Valid-Until on a mirror's stored copy.
  if ! mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include="$packages" \
    "$suite" "$root.tmp" "$mirror" >"$cache/$release.log" 2>&1; then
    echo "slurm-release.sh: error: $release: mmdebstrap $suite failed: $(tail -2 "$cache/$release.log" | tr '\n' ' ')" >&2
    rm -rf "$root.tmp"
    exit 1
  fi
  local version
  version=$(chroot "$root.tmp" slurmd -V)
  case $version in
    *" $release".*) ;;
    *) echo "slurm-release.sh: error: Debian $suite's slurmd is $version now, not $release" >&2; rm -rf "$root.tmp"; exit 1 ;;
  esac
  echo "$version (Debian $suite)" > "$root.tmp/.gpubind-slurm"
  rm -rf "$root"
  mv "$root.tmp" "$root"
  echo "$root: $(cat "$root/.gpubind-slurm")"
}

releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(24.11 26.05)
for r in "${releases[@]}"; do make_root "$r"; done
