#!/usr/bin/env bash
# Packaging: `cmake --install` with DESTDIR puts every file where it belongs; the Debian package
# built by CPack installs with dpkg into a clean root and its gpubind runs; the man pages render
# and document every flag of their command; bash completion works from the installed file.
# Usage: packaging.sh GPUBIND BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "${2:?usage: $0 GPUBIND BUILD_DIR}" && pwd)
for t in cpack dpkg dpkg-deb groff; do command -v $t >/dev/null || skip "$t not found (Debian packages cmake, dpkg-dev, groff-base)"; done

# 1. DESTDIR install.
DESTDIR="$WORK/stage" cmake --install "$BUILD" --prefix /usr >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$WORK/install.log")"
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for f in usr/bin/gpubind usr/share/man/man1/gpubind.1 usr/share/man/man1/gpubind-launch.1 \
         usr/share/bash-completion/completions/gpubind usr/share/zsh/vendor-completions/_gpubind \
         usr/share/gpubind/deploy/gpubind.conf usr/share/gpubind/deploy/slurm/plugstack.conf \
         usr/share/gpubind/deploy/kubernetes/training-job.yaml; do
  [ -f "$WORK/stage/$f" ] || fail "DESTDIR install lacks $f"
done
if [ -f "$(dirname "$GPUBIND")/gpubind_spank.so" ]; then
  [ -f "$WORK/stage/usr/lib/$arch/slurm-wlm/gpubind_spank.so" ] && pass "SPANK plugin installed in Debian's Slurm plugin dir (lib/$arch/slurm-wlm)" \
    || fail "plugin not in usr/lib/$arch/slurm-wlm: $(find "$WORK/stage" -name '*.so')"
fi
# The hwloc discovery module, which the binary loads from ../LIBDIR/gpubind when it must discover.
module=$(find "$WORK/stage/usr/lib" -name gpubind-hwloc.so 2>/dev/null | head -1)
[ -n "$module" ] && pass "hwloc discovery module installed: ${module#$WORK/stage/}" || fail "DESTDIR install lacks gpubind-hwloc.so"
http=$(find "$WORK/stage/usr/lib" -name gpubind-http.so 2>/dev/null | head -1)
[ "$(dirname "$http")" = "$(dirname "$module")" ] && pass "watch --listen's HTTP module installed beside it" \
  || fail "DESTDIR install lacks gpubind-http.so beside gpubind-hwloc.so: '$http'"
yaml=$(find "$WORK/stage/usr/lib" -name gpubind-yaml.so 2>/dev/null | head -1)
[ "$(dirname "$yaml")" = "$(dirname "$module")" ] && pass "k8s check's YAML module installed beside it" \
  || fail "DESTDIR install lacks gpubind-yaml.so beside gpubind-hwloc.so: '$yaml'"
if [ -f "$(dirname "$GPUBIND")/gpubind-podresources.so" ]; then
  podres=$(find "$WORK/stage/usr/lib" -name gpubind-podresources.so 2>/dev/null | head -1)
  [ "$(dirname "$podres")" = "$(dirname "$module")" ] && pass "k8s check's pod-resources API module installed beside it" \
    || fail "DESTDIR install lacks gpubind-podresources.so beside gpubind-hwloc.so: '$podres'"
fi
[ $failures = 0 ] && pass "DESTDIR install: binary, hwloc module, man pages, completions, deploy examples"

# 2. The Debian package: built, installed by dpkg into an empty root, run.
mkdir -p "$WORK/pkg"
(cd "$WORK/pkg" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$WORK/cpack.log")"
deb=$(ls "$WORK"/pkg/gpubind_*.deb 2>/dev/null | head -1)
if [ -n "$deb" ]; then
  dpkg-deb -I "$deb" | grep -q "Depends:.*libhwloc15" && pass "package $(basename "$deb"): Depends names libhwloc15" \
    || fail "Depends: $(dpkg-deb -I "$deb" | grep Depends)"
  dpkg-deb -I "$deb" | grep -q "Depends:.*libcpp-httplib" && pass "Depends names libcpp-httplib (watch --listen)" \
    || fail "Depends lacks libcpp-httplib: $(dpkg-deb -I "$deb" | grep Depends)"
  dpkg-deb -I "$deb" | grep -q "Depends:.*libyaml-0-2" && pass "Depends names libyaml-0-2 (k8s check)" \
    || fail "Depends lacks libyaml-0-2: $(dpkg-deb -I "$deb" | grep Depends)"
  if [ -f "$(dirname "$GPUBIND")/gpubind-podresources.so" ]; then
    dpkg-deb -I "$deb" | grep -q "Depends:.*libgrpc++" && pass "Depends names libgrpc++ (k8s check's pod-resources API)" \
      || fail "Depends lacks libgrpc++: $(dpkg-deb -I "$deb" | grep Depends)"
  fi
  R="$WORK/root"
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
  : >"$R/var/lib/dpkg/status"
  # The clean root has no libhwloc15 registered; the host's library is used to run it.
  dpkg --root="$R" --force-depends --force-script-chrootless -i "$deb" >"$WORK/dpkg.log" 2>&1 || fail "dpkg -i: $(tail -3 "$WORK/dpkg.log")"
  dpkg --root="$R" -s gpubind 2>/dev/null | grep -q "^Status: install ok installed" && pass "dpkg installed it into a clean root" \
    || fail "dpkg status: $(dpkg --root="$R" -s gpubind 2>&1 | head -3)"
  out=$("$R/usr/bin/gpubind" topo 2>&1)
  [ $? = 0 ] && echo "$out" | grep -q "^Machine" && pass "the installed gpubind runs: $(echo "$out" | head -1)" || fail "installed topo: $out"
  [ "$("$R/usr/bin/gpubind" --version | awk '{print $2}')" = "$("$GPUBIND" --version | awk '{print $2}')" ] \
    && pass "installed version = built version" || fail "version mismatch"
fi

# 3. Man pages render without warnings and carry every flag of their command's --help.
bad=0
for page in "$WORK"/stage/usr/share/man/man1/gpubind-*.1; do
  c=$(basename "$page" .1); c=${c#gpubind-}
  text=$(groff -man -Tutf8 -ww "$page" 2>"$WORK/groff.err" | col -b 2>/dev/null || groff -man -Tascii "$page")
  [ -s "$WORK/groff.err" ] && { bad=1; fail "groff warnings for $c: $(head -2 "$WORK/groff.err")"; }
  case $c in
    slurm) help=$("$GPUBIND" slurm gres-conf --help) ;;
    k8s) help=$("$GPUBIND" k8s check --help) ;;
    *) help=$("$GPUBIND" "$c" --help 2>&1) ;;
  esac
  for flag in $(echo "$help" | grep -oE -- '--[a-z][-a-z_]*' | sort -u); do
    echo "$text" | grep -q -- "$flag" || { bad=1; fail "man gpubind-$c lacks $flag"; }
  done
done
[ $bad = 0 ] && pass "man pages: render cleanly, every --help flag documented"

# 4. bash completion from the installed file completes commands and flags.
got=$(PATH="$WORK/stage/usr/bin:$PATH" bash -c '. "$1"; COMP_WORDS=(gpubind la); COMP_CWORD=1; _gpubind; echo "${COMPREPLY[*]}";
  COMP_WORDS=(gpubind launch --nproc); COMP_CWORD=2; _gpubind; echo "${COMPREPLY[*]}";
  COMP_WORDS=(gpubind k8s check --kubelet); COMP_CWORD=3; _gpubind; echo "${COMPREPLY[*]}"' _ "$WORK/stage/usr/share/bash-completion/completions/gpubind")
[ "$got" = "launch
--nproc-per-node --nproc_per_node
--kubelet-config --kubelet-dir" ] && pass "bash completion: commands, flags, a subcommand's flags" || fail "completion: [$got]"
finish
