#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (built by `make build-fuzz`).
#   scripts/fuzz.sh BUILD_DIR regress      every seed and regression input once, then a fixed-seed
#                                          run of 2000 inputs per target: deterministic, for make test
#   scripts/fuzz.sh BUILD_DIR replay       every seed and regression input once through the
#                                          replay_TARGET programs of a build configured with
#                                          -DGPUBIND_FUZZ_REPLAY=ON (the sanitizer build; make test)
#   scripts/fuzz.sh BUILD_DIR fuzz SECONDS each target for SECONDS, new inputs kept in
#                                          BUILD_DIR/fuzz-corpus/TARGET, crashes in BUILD_DIR/fuzz-crashes
# Seeds: fuzz/corpus/TARGET (inputs written for it, and every crash found, as regression cases)
# plus the repository's own fixtures (example topologies, bad inputs, configuration files) and
# hwloc XML that hwloc itself writes for synthetic machines.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR regress|replay|fuzz [SECONDS]}
mode=${2:?usage: $0 BUILD_DIR regress|replay|fuzz [SECONDS]}
seconds=${3:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
targets=(cpulist env json_topology nccl hwloc_xml config probe spank k8s yaml http bench_record doctor)

gen=$build/fuzz-generated
mkdir -p "$gen/hwloc_xml"
if command -v lstopo-no-graphics >/dev/null; then
  for s in "pack:2 numa:2 l3:2 core:4 pu:2" "pack:1 core:3 pu:4" "numa:4 core:2 pu:1"; do
    name=$(echo "$s" | tr -c 'a-z0-9' '_')
    [ -s "$gen/hwloc_xml/$name.xml" ] || lstopo-no-graphics -i "$s" --of xml "$gen/hwloc_xml/$name.xml" 2>/dev/null || true
  done
fi

seeds() {  # the read-only seed directories of a target
  echo "$src/fuzz/corpus/$1"
  case $1 in
    json_topology) echo "$src/data/examples"; echo "$src/tests/data/bad" ;;
    nccl) echo "$src/tests/data/bad" ;;
    hwloc_xml) echo "$src/tests/data/bad"; echo "$gen/hwloc_xml" ;;
    config) echo "$src/tests/data/config" ;;
    yaml) echo "$src/tests/data/k8s/yaml"; echo "$src/deploy/kubernetes" ;;
  esac
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
summary=()
for t in "${targets[@]}"; do
  bin=$build/fuzz/fuzz_$t
  [ "$mode" = replay ] && bin=$build/fuzz/replay_$t
  [ -x "$bin" ] || { echo "fuzz: $bin is missing (make build-fuzz; for replay, make build-asan-unit)"; exit 2; }
  mapfile -t dirs < <(seeds "$t")
  log=$build/fuzz-$t.log
  if [ "$mode" = replay ]; then
    existing=()
    for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
    if "$bin" "${existing[@]}" >"$log" 2>&1; then
      summary+=("$t: $(sed -n 's/^replay: \([0-9]*\) input(s), no failure$/\1/p' "$log") seed/regression inputs, no failure")
    else
      summary+=("$t: FAILED (see $log)"); tail -30 "$log"; failed=1
    fi
  elif [ "$mode" = regress ]; then
    files=()
    for d in "${dirs[@]}"; do [ -d "$d" ] && while IFS= read -r f; do files+=("$f"); done < <(find "$d" -type f | sort); done
    if "$bin" -rss_limit_mb=2048 "${files[@]}" >"$log" 2>&1 && "$bin" -seed=1 -runs=2000 -max_len=4096 -rss_limit_mb=2048 >>"$log" 2>&1; then
      summary+=("$t: ${#files[@]} seed/regression inputs and 2000 fixed-seed inputs, no failure")
    else
      summary+=("$t: FAILED (see $log)"); tail -30 "$log"; failed=1
    fi
  else
    work=$build/fuzz-corpus/$t crashes=$build/fuzz-crashes/$t
    mkdir -p "$work" "$crashes"
    "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 \
      "$work" "${dirs[@]}" >"$log" 2>&1 || failed=1
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    summary+=("$t: ${runs:-?} executions in ${seconds} s, corpus $(ls "$work" | wc -l) inputs, crashes: $(ls "$crashes" | wc -l)")
  fi
done
printf '%s\n' "${summary[@]}"
exit $failed
