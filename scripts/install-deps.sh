#!/usr/bin/env bash
# Installs, from Debian 12 packages, everything gpubind's build and tests need (`--build`: only
# the build's, for `make build` and `make run`).
# Idempotent: when every package is already present it does nothing (no apt-get update) and
# returns in well under a second. Needs root (or sudo) only when something is missing.
set -euo pipefail

# What `make build` and `make run` need: the compiler, the libraries, the headers the tests and
# benchmarks compile against, and Slurm's SPANK header for the plugin.
build_packages=(
  cmake g++ make pkg-config
  # ninja runs the builds (the Makefile configures with it when present): on 2 vCPUs it builds the
  # tree in 16 % less time than CMake's Makefiles, which spend CPU on their own dependency scans
  ninja-build
  # lld lays out the functions exec runs together (src/CMakeLists.txt)
  lld
  libhwloc-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  # bench --ab --step-regex: users' patterns matched in linear time, with named groups
  libre2-dev
  # k8s check: the kubelet's config.yaml, read by libyaml, and its pod-resources API, asked through
  # gRPC (each in a module only that command loads)
  libyaml-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # ROCm SMI's ABI (its header; the library is loaded at run time where AMD GPUs are)
  librocm-smi-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libslurm-dev
)
# What `make test` adds: the real components the tests run against.
test_packages=(
  # tools the tests and benchmarks run; stress-ng loads the CPUs for `make test-load`; valgrind's
  # callgrind lists the functions exec runs (scripts/hot-symbols.sh, tests/integration/hot_symbols.sh)
  hwloc-nox hyperfine bzip2 numactl stress-ng valgrind
  # real clients of `gpubind exec` and `gpubind launch`: Open MPI's mpirun, PyTorch DDP (CPU, gloo)
  openmpi-bin python3-torch
  # the Slurm test refuses set_mempolicy to slurmd with a seccomp filter (tests/slurm/seccomp_deny.py)
  python3-seccomp
  # Slurm: a throw-away local cluster for the SPANK plugin's tests
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
  # Slurm's newer releases for the slurm-new tier: Debian trixie's and forky's packages in roots
  # of their own (scripts/slurm-release.sh)
  mmdebstrap
  # packaging: the Debian packages' Depends (dpkg-shlibdeps), lintian, man page rendering, completion test
  dpkg-dev groff-base bsdextrautils lintian
  # function lengths (scripts/function-lengths.sh, the lint that keeps command bodies short)
  universal-ctags
  # the layout of changed lines (.clang-format, scripts/format-check.sh: git clang-format)
  clang-format
  # fuzzing: clang with libFuzzer and its sanitizer runtimes (make fuzz, make fuzz-regress)
  clang libclang-rt-14-dev
  # fault injection: libfiu failure points in the sanitizer build, fiu-run (docs/FAULTS.md)
  libfiu-dev fiu-utils
  # the cache-forgery test creates and removes a second user
  passwd util-linux
  # the exporter's unit read by systemd itself: systemd-analyze verify and security (exposure score)
  systemd
  # watch --listen scraped by a real Prometheus; promtool checks the exposition and the alert rules
  prometheus
  # node_exporter's textfile collector: the second way watch's metrics reach Prometheus
  prometheus-node-exporter
  # the qemu tier: Debian's kernel in a multi-socket, multi-NUMA VM (TCG), a busybox initramfs;
  # xz to unpack the kernel's ELF once, libc6-dev for the static guest helper
  qemu-system-x86 linux-image-amd64 busybox-static xz-utils libc6-dev
  # the drawings (topo/plan --format svg) rendered to PNG by a real browser, headless
  chromium
  # deploy/kubernetes: the manifests read by a real YAML parser
  python3-yaml
  # a real container with the distribution's default seccomp profile (and Docker's rule for
  # set_mempolicy applied to it): podman runs crun on a rootfs of this machine's own /usr
  podman crun golang-github-containers-common
)

case "${1:-all}" in
  --build) packages=("${build_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [--build]   (--build: only what building needs; default: everything make test needs)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  # dpkg-query is fast (no apt cache load); "install ok installed" means fully installed.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: error: need root to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
