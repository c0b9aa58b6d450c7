#!/usr/bin/env bash
# Packaging: `cmake --install` with DESTDIR puts every file where it belongs; CPack builds three
# Debian packages (gpubind, whose Depends are only what exec needs; gpubind-exporter with the HTTP
# module and the systemd unit; gpubind-k8s with the YAML and pod-resources modules), lintian finds
# no error in any, they install with dpkg into a clean root and gpubind runs, and without the
# optional packages their commands say which package to install; the man pages render and
# document every flag of their command; bash completion works from the installed file; `cmake
# --install` strips what it installs and keeps the debug information in usr/lib/debug.
# Usage: packaging.sh GPUBIND BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "${2:?usage: $0 GPUBIND BUILD_DIR}" && pwd)
for t in cpack dpkg dpkg-deb groff; do command -v $t >/dev/null || skip "$t not found (Debian packages cmake, dpkg-dev, groff-base)"; done

# 1. DESTDIR install.
DESTDIR="$WORK/stage" cmake --install "$BUILD" --prefix /usr >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$WORK/install.log")"
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for f in usr/bin/gpubind usr/share/man/man1/gpubind.1.gz usr/share/man/man1/gpubind-launch.1.gz \
         usr/share/bash-completion/completions/gpubind usr/share/zsh/vendor-completions/_gpubind \
         usr/share/gpubind/deploy/gpubind.conf usr/share/gpubind/deploy/slurm/plugstack.conf \
         usr/share/gpubind/deploy/kubernetes/training-job.yaml usr/lib/systemd/system/gpubind-watch.service \
         usr/share/doc/gpubind/copyright usr/share/doc/gpubind/changelog.gz; do
  [ -f "$WORK/stage/$f" ] || fail "DESTDIR install lacks $f"
done
# The Slurm Prolog and Epilog are installed runnable, as slurm.conf names them.
for f in gpubind-prolog.sh gpubind-epilog.sh; do
  [ -x "$WORK/stage/usr/share/gpubind/deploy/slurm/$f" ] || fail "DESTDIR install: deploy/slurm/$f missing or not executable"
done
if [ -f "$(dirname "$GPUBIND")/gpubind_spank.so" ]; then
  plugin=$WORK/stage/usr/lib/$arch/slurm-wlm/gpubind_spank.so
  [ -f "$plugin" ] && pass "SPANK plugin installed in Debian's Slurm plugin dir (lib/$arch/slurm-wlm)" \
    || fail "plugin not in usr/lib/$arch/slurm-wlm: $(find "$WORK/stage" -name '*.so')"
  # The release it was built for is still in the stripped file, where doctor reads it.
  spank_release=$(grep -a -o 'gpubind SPANK plugin built for Slurm [0-9.]*' "$plugin" 2>/dev/null | sed -n 's/.* Slurm \([0-9.]*[0-9]\)$/\1/p' | head -1)
  [ -n "$spank_release" ] && pass "the installed plugin says the Slurm it was built for: $spank_release" ||
    fail "the installed plugin does not say which Slurm it was built for"
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
# Installed stripped, debug information kept as Debian keeps it (issue 34 item 5): each ELF file
# without .debug_info but with a .gnu_debuglink naming its file under usr/lib/debug, which holds
# the debug information; the stripped binary and its modules still run.
# The full binary, where the build has the static front (src/CMakeLists.txt), beside the modules.
elves="usr/bin/gpubind usr/lib/gpubind/gpubind-hwloc.so usr/lib/gpubind/gpubind-http.so usr/lib/gpubind/gpubind-yaml.so"
[ -x "$(dirname "$GPUBIND")/gpubind-full" ] && elves="$elves usr/lib/gpubind/gpubind-full"
stripped=0
for f in $elves; do
  sections=$(readelf -S -W "$WORK/stage/$f" 2>/dev/null)
  debug_sections=$(readelf -S -W "$WORK/stage/usr/lib/debug/$f.debug" 2>/dev/null)
  link=$(readelf -p .gnu_debuglink "$WORK/stage/$f" 2>/dev/null | sed -n 's/.*\] *\([^ ]*\.debug\).*/\1/p')
  if echo "$sections" | grep -q '\.debug_info' || ! echo "$debug_sections" | grep -q '\.debug_info' || [ "$link" != "$(basename "$f").debug" ]; then
    fail "$f: not stripped with its debug file (debuglink '$link')"
  else
    stripped=$((stripped + 1))
  fi
done
"$WORK/stage/usr/bin/gpubind" topo --topology example:dgx-h100 >/dev/null 2>&1 && "$WORK/stage/usr/bin/gpubind" topo -q >/dev/null 2>&1 \
  || fail "the stripped binary does not run (with its hwloc module)"
size=$(du -sk --exclude=usr/lib/debug "$WORK/stage" | cut -f1)
debug=$(du -sk "$WORK/stage/usr/lib/debug" | cut -f1)
[ "$stripped" = "$(echo $elves | wc -w)" ] && pass "installed stripped: $((size / 1024)) MiB, debug information $((debug / 1024)) MiB in usr/lib/debug, linked"

# 2. The Debian packages: built, checked by lintian, installed by dpkg into an empty root, run.
mkdir -p "$WORK/pkg"
(cd "$WORK/pkg" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$WORK/cpack.log")"
deb=$(ls "$WORK"/pkg/gpubind_*.deb 2>/dev/null | head -1)
exporter=$(ls "$WORK"/pkg/gpubind-exporter_*.deb 2>/dev/null | head -1)
k8s=$(ls "$WORK"/pkg/gpubind-k8s_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && [ -n "$exporter" ] && [ -n "$k8s" ] && pass "cpack built three packages: $(cd "$WORK/pkg" && ls *.deb | tr '\n' ' ')" \
  || fail "cpack built: $(ls "$WORK"/pkg/*.deb 2>&1 | tr '\n' ' ')"
field() { dpkg-deb -f "$1" "$2" 2>/dev/null; }
# The packages are stripped by CPack and carry no debug tree (Debian ships that in -dbgsym packages).
for p in $deb $exporter $k8s; do
  dpkg-deb -c "$p" | grep -q 'usr/lib/debug' && fail "$(basename "$p") carries usr/lib/debug"
done
if [ -n "$deb" ]; then
  # The core package depends on what exec needs, no more: no HTTP, YAML, gRPC, protobuf or abseil.
  dep=$(field "$deb" Depends)
  echo "$dep" | grep -q "libhwloc15" && pass "gpubind Depends: $dep" || fail "gpubind Depends lacks libhwloc15: $dep"
  heavy=$(echo "$dep" | tr ',' '\n' | grep -E "httplib|yaml|grpc|protobuf|absl|libssl" | tr -d ' ' | tr '\n' ' ')
  [ -z "$heavy" ] && pass "gpubind depends on no optional module's library" || fail "gpubind Depends names $heavy"
  [ "$(field "$deb" Recommends)" = "gpubind-exporter" ] && pass "gpubind Recommends gpubind-exporter" \
    || fail "gpubind Recommends: $(field "$deb" Recommends)"
  field "$deb" Suggests | grep -q "gpubind-k8s" && pass "gpubind Suggests gpubind-k8s" || fail "Suggests: $(field "$deb" Suggests)"
  dpkg-deb -c "$deb" | grep -qE "gpubind-(http|yaml|podresources)\.so" && fail "gpubind ships an optional module: $(dpkg-deb -c "$deb" | grep -oE 'gpubind-[a-z]+\.so' | tr '\n' ' ')"
  [ "$(field "$deb" Description | sed -n 2p)" != "" ] && pass "gpubind has an extended description" || fail "no extended description"
  if [ -n "${spank_release:-}" ]; then
    series=${spank_release%.*}
    field "$deb" Description | grep -q "built for Slurm $series " && pass "gpubind's description says its plugin is for Slurm $series" ||
      fail "gpubind's description does not say its plugin is for Slurm $series: $(field "$deb" Description | tail -4 | tr '\n' ' ')"
  fi
fi
if [ -n "$exporter" ]; then
  dep=$(field "$exporter" Depends)
  # The server is our own, linked with its C++ runtime: gpubind, and libc at most.
  others=$(echo "$dep" | tr ',' '\n' | tr -d ' ' | grep -vE "^(gpubind\(=.*\)|libc6.*)$" | tr '\n' ' ')
  [ -z "$others" ] && echo "$dep" | grep -q "gpubind (= $("$GPUBIND" --version | awk '{print $2}'))" \
    && pass "gpubind-exporter Depends: $dep" || fail "gpubind-exporter Depends: $dep"
  dpkg-deb -c "$exporter" | grep -q " \./usr/lib/systemd/system/gpubind-watch.service$" && pass "gpubind-exporter ships the unit in /usr/lib/systemd/system" \
    || fail "gpubind-exporter lacks usr/lib/systemd/system/gpubind-watch.service: $(dpkg-deb -c "$exporter" | awk '{print $6}' | tr '\n' ' ')"
fi
if [ -n "$k8s" ]; then
  dep=$(field "$k8s" Depends)
  echo "$dep" | grep -q "libyaml-0-2" && pass "gpubind-k8s Depends names libyaml-0-2" || fail "gpubind-k8s Depends: $dep"
  if [ -f "$(dirname "$GPUBIND")/gpubind-podresources.so" ]; then
    echo "$dep" | grep -q "libgrpc++" && pass "gpubind-k8s Depends names libgrpc++ (the pod-resources API)" || fail "gpubind-k8s Depends lacks libgrpc++: $dep"
  fi
fi

# lintian, Debian's package checker: no error in any package (its warnings are printed).
if command -v lintian >/dev/null; then
  for p in "$deb" "$exporter" "$k8s"; do
    [ -n "$p" ] || continue
    lintian --allow-root --tag-display-limit 0 "$p" >"$WORK/lintian.out" 2>&1
    errors=$(grep -c '^E: ' "$WORK/lintian.out")
    warnings=$(grep '^W: ' "$WORK/lintian.out" | sed 's/^W: [^:]*: //' | awk '{print $1}' | sort | uniq -c | awk '{printf "%s%s (%d)", sep, $2, $1; sep=", "}')
    [ "$errors" = 0 ] && pass "lintian $(basename "$p"): no error${warnings:+; warnings: $warnings}" \
      || fail "lintian $(basename "$p"): $errors error(s): $(grep '^E: ' "$WORK/lintian.out" | head -5 | tr '\n' ' ')"
  done
else
  echo "SKIP lintian: not installed (Debian package lintian; scripts/install-deps.sh installs it)"
fi

if [ -n "$deb" ]; then
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
  # Without gpubind-exporter, --listen says which package brings it; --textfile still works.
  out=$("$R/usr/bin/gpubind" watch --pid $$ --count 1 --listen 127.0.0.1:1 2>&1 >/dev/null); rc=$?
  [ $rc != 0 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "gpubind-http.so is not installed.*the Debian package gpubind-exporter installs it" \
    && pass "without gpubind-exporter, --listen: $out" || fail "watch --listen without the exporter package: exit $rc: $out"
  if [ -n "$exporter" ]; then
    dpkg --root="$R" --force-depends --force-script-chrootless -i "$exporter" >"$WORK/dpkg.log" 2>&1 || fail "dpkg -i exporter: $(tail -3 "$WORK/dpkg.log")"
    [ -f "$R/usr/lib/systemd/system/gpubind-watch.service" ] && pass "gpubind-exporter installed the unit where systemd finds it" \
      || fail "no usr/lib/systemd/system/gpubind-watch.service after installing gpubind-exporter"
    if command -v systemd-analyze >/dev/null; then
      # systemd's own reading of the installed unit: its ExecStart names the installed binary.
      sed "s|^ExecStart=/usr/bin/gpubind|ExecStart=$R/usr/bin/gpubind|" "$R/usr/lib/systemd/system/gpubind-watch.service" >"$WORK/gpubind-watch.service"
      systemd-analyze verify --man=no "$WORK/gpubind-watch.service" >"$WORK/verify.out" 2>&1 \
        && pass "systemd-analyze verify: the installed unit is valid" || fail "systemd-analyze verify: $(head -3 "$WORK/verify.out")"
    fi
  fi
fi

# 2b. A packaged binary loads modules only from where its package installs them: the build's
#     prefix (/usr/local/lib/gpubind, which Debian lets the staff group write) is no place to look.
#     A module planted there, whose package is not installed, ran as root in doctor before.
planted=/usr/local/lib/gpubind
if [ -z "$deb" ]; then
  :
elif [ "$(id -u)" != 0 ] || [ -e "$planted" ] || ! command -v cc >/dev/null; then
  echo "SKIP (part): planting a module in $planted needs root, a C compiler and no $planted already"
else
  printf '#include <stdio.h>\n__attribute__((constructor)) static void planted(void) { FILE* f = fopen("%s", "w"); if (f) fclose(f); }\n' \
    "$WORK/planted-ran" >"$WORK/planted.c"
  mkdir -p "$planted" && cc -shared -fPIC -o "$planted/gpubind-yaml.so" "$WORK/planted.c" && cp "$planted/gpubind-yaml.so" "$planted/gpubind-http.so"
  mkdir -p "$WORK/node/etc" && echo "cpuManagerPolicy: static" >"$WORK/node/etc/kubelet.yaml"
  out=$("$R/usr/bin/gpubind" doctor --root "$WORK/node" --topology example:dgx-h100 --kubelet-config /etc/kubelet.yaml 2>&1)
  rc=$?
  wout=$("$R/usr/bin/gpubind" watch --pid $$ --count 1 --listen 127.0.0.1:1 2>&1 >/dev/null)
  rm -rf "$planted"
  [ ! -e "$WORK/planted-ran" ] && [ $rc = 1 ] && echo "$out" | grep -q "gpubind-yaml.so" && ! echo "$out$wout" | grep -q "$planted" \
    && pass "modules planted in $planted are not loaded by the packaged binary (doctor: $out)" \
    || fail "planted module: ran=$([ -e "$WORK/planted-ran" ] && echo yes || echo no) doctor exit $rc: $out / watch: $wout"
fi

# 3. Man pages render without warnings and carry every flag of their command's --help.
bad=0
for page in "$WORK"/stage/usr/share/man/man1/gpubind-*.1.gz; do
  c=$(basename "$page" .1.gz); c=${c#gpubind-}
  zcat "$page" >"$WORK/page.1"
  text=$(groff -man -Tutf8 -ww "$WORK/page.1" 2>"$WORK/groff.err" | col -b 2>/dev/null || groff -man -Tascii "$WORK/page.1")
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
