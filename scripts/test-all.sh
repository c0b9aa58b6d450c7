#!/usr/bin/env bash
# `make test` and `make test-all`: every pass of the tier, whatever an earlier one did, then one
# summary of all failures.
#
# TIER=test (`make test`, the README's command, at most 20 minutes from a clean clone):
#   1. the main build (-Werror) and every ctest test that needs no VM (unit, cli, lint, live,
#      integration including Slurm, podman, Prometheus and packaging)
#   2. the AddressSanitizer + UndefinedBehaviorSanitizer build (ASAN_BUILD), only the programs its
#      tests run, and its unit and faults tests
#   3. every fuzz target's seed and regression inputs, through the sanitizer build's replay
#      programs (scripts/fuzz.sh replay)
# TIER=all (`make test-all`, what .ci/run runs) adds:
#   - the qemu tier (ctest -L qemu: Debian's kernel in multi-socket VMs)
#   - the Slurm releases of the slurm-new tier made when missing (scripts/slurm-release.sh: Debian
#     trixie's 24.11 and forky's 26.05, kept outside the clone); `make test` runs that tier where
#     they are made and skips it, saying so, where not
#   - the mutation check (tests/mutation/mutate.py): deliberate breakages of the planner, the
#     binder, watch's rules and loop and the exit policy, each of which the suite must fail on
#   - every CLI case under the sanitizers (ASAN_BUILD, ctest -L cli)
#   - the libFuzzer build of the fuzz targets: every input, then a fixed-seed run of 2000 inputs
#     per target (scripts/fuzz.sh regress) instead of the replay
#   - the load pass: the live and integration tests again beside TEST_LOAD busy CPU workers
#     (stress-ng), as on a shared CI machine
#
# A failing pass no longer hides the next: each runs, its wall time and failures are kept, and
# the script exits 1 at the end if any failed, naming each failed test. ctest's own per-label
# time (the sum of its tests' times, under "Label Time Summary") and the slowest tests are
# repeated in the summary.
#
# GPUBIND_TEST_LOAD=N runs N busy CPU workers (stress-ng) beside the whole run (`make test-load`).
#
# Usage: test-all.sh   (from the repository root; TIER, BUILD, ASAN_BUILD, FUZZ_BUILD, JOBS,
#                        TEST_LOAD, CMAKE_ARGS as the Makefile passes them)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ASAN_BUILD=${ASAN_BUILD:-build-asan}
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
LOAD=${GPUBIND_TEST_LOAD:-0}
TIER=${TIER:-test}
TEST_LOAD=${TEST_LOAD:-2}
case "$TIER" in test|all) ;; *) echo "test-all: error: TIER=$TIER: not test or all" >&2; exit 2 ;; esac
MAKE=${MAKE:-make}

summary=()        # one line per pass
failed=()         # "pass: what failed"
failed_passes=()  # the name of each pass that failed
started=$(date +%s)

stress_pid=
stop_load() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null; stress_pid=; }
trap stop_load EXIT
if [ "$LOAD" -gt 0 ]; then
  command -v stress-ng >/dev/null || { echo "test-all: error: GPUBIND_TEST_LOAD=$LOAD: stress-ng is not installed (Debian package stress-ng; scripts/install-deps.sh installs it)" >&2; exit 2; }
  stress-ng --cpu "$LOAD" --cpu-method matrixprod --quiet &
  stress_pid=$!
  echo "== test-all: $LOAD busy CPU workers (stress-ng, pid $stress_pid) run beside every pass"
fi

# pass NAME COMMAND...: runs it, records its wall time and whether it passed.
pass() {
  local name=$1; shift
  local t0=$(date +%s)
  echo
  echo "== test-all: $name"
  "$@"
  local rc=$? t=$(($(date +%s) - t0))
  if [ $rc = 0 ]; then summary+=("$(printf '%-28s passed  %4d s' "$name" $t)")
  else
    summary+=("$(printf '%-28s FAILED  %4d s (exit %d)' "$name" $t $rc)")
    failed_passes+=("$name")
  fi
  return $rc
}

# The tests ctest ran and failed in DIR, one line each, from its own record.
ctest_failures() {
  local log="$1/Testing/Temporary/LastTestsFailed.log"
  [ -s "$log" ] && sed 's/^[0-9]*://' "$log"
}

# ctest's "Label Time Summary" of the run in LOG, for the summary.
label_times=()
keep_label_times() {
  local line
  while IFS= read -r line; do label_times+=("$1 $line"); done < <(sed -n '/^Label Time Summary:/,/^$/{/^Label Time Summary:/d;/^$/d;p}' "$2")
}

# The slowest tests of the run in LOG ("N/M Test #K: NAME .... Passed  12.34 sec"), for the summary.
slowest=()
keep_slowest() {
  local line
  while IFS= read -r line; do slowest+=("$1 $line"); done < <(
    sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec$/\2 s  \1/p' "$2" | sort -rn | head -10)
}

run_ctest() {  # DIR LOG [ctest args]
  local dir=$1 log=$2; shift 2
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
  (cd "$dir" && ctest --output-on-failure -j"$JOBS" "$@") 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  keep_label_times "$(basename "$dir")" "$log"
  keep_slowest "$(basename "$dir")" "$log"
  return $rc
}

# The load pass: the live and integration tests again beside TEST_LOAD busy CPU workers.
under_load() {
  command -v stress-ng >/dev/null || { echo "test-all: error: the load pass needs stress-ng (Debian package stress-ng; scripts/install-deps.sh installs it)" >&2; return 2; }
  stress-ng --cpu "$TEST_LOAD" --cpu-method matrixprod --quiet &
  stress_pid=$!  # stopped by the EXIT trap too
  run_ctest "$@"
  local rc=$?
  stop_load
  return $rc
}

# ctest_pass NAME DIR LOG [ctest args]: a ctest run as a pass, each failed test named.
ctest_pass() {
  local name=$1 dir=$2; shift 2
  pass "$name" run_ctest "$dir" "$@" || while IFS= read -r t; do failed+=("$name: $t"); done < <(ctest_failures "$dir")
}

mkdir -p "$BUILD"
# The slurm-new tier's Slurm releases (Debian's packages, in a cache outside the clone), made before
# the build is configured: the SPANK plugin is built for each release found there.
if [ "$TIER" = all ]; then
  pass "Slurm 24.11 and 26.05 roots" scripts/slurm-release.sh || failed+=("Slurm 24.11 and 26.05 roots: not made, the slurm-new tests skip")
fi
if pass "build ($BUILD)" "$MAKE" --no-print-directory build; then
  if [ "$TIER" = all ]; then
    ctest_pass "ctest ($BUILD)" "$BUILD" "$BUILD/ctest.log"
    pass "mutation check ($BUILD)" /usr/bin/python3 tests/mutation/mutate.py "$BUILD" \
      || failed+=("mutation check ($BUILD): a breakage survived or no longer applies (see 'mutation:' lines above)")
  else
    ctest_pass "ctest ($BUILD)" "$BUILD" "$BUILD/ctest.log" -LE qemu
  fi
else
  failed+=("build ($BUILD): did not build; its tests did not run")
fi

# The sanitizer build: every program for `make test-all` (which runs the CLI cases under it), else
# only what the unit and faults tests run.
asan_targets=build-asan
[ "$TIER" = test ] && asan_targets=build-asan-unit
if pass "build ($ASAN_BUILD)" "$MAKE" --no-print-directory $asan_targets; then
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  # The lints check the layering by linking, not memory: the main build runs them. The corpus
  # (44 real machines' files through every loader) runs under the sanitizers in test-all.
  labels='unit|faults' skip='lint|corpus'
  [ "$TIER" = all ] && labels='unit|cli|faults' skip='lint'
  ctest_pass "ctest ($ASAN_BUILD)" "$ASAN_BUILD" "$ASAN_BUILD/ctest.log" -L "$labels" -LE "$skip"
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  failed+=("build ($ASAN_BUILD): did not build; its tests did not run")
fi

# Every fuzz target's seed and regression inputs under the sanitizers: the sanitizer build's replay
# programs for make test; libFuzzer's own build, with its fixed-seed run, for make test-all.
if [ "$TIER" = all ]; then
  pass "fuzz regression" "$MAKE" --no-print-directory fuzz-regress || failed+=("fuzz regression: see its output above")
else
  pass "fuzz replay ($ASAN_BUILD)" scripts/fuzz.sh "$ASAN_BUILD" replay || failed+=("fuzz replay ($ASAN_BUILD): see its output above")
fi

if [ "$TIER" = all ] && [ "$LOAD" = 0 ] && [ -x "$BUILD/src/gpubind" ]; then
  name="ctest ($BUILD, beside $TEST_LOAD busy CPU workers)"
  pass "$name" under_load "$BUILD" "$BUILD/ctest-load.log" -L 'live|integration' -LE qemu \
    || while IFS= read -r t; do failed+=("$name: $t"); done < <(ctest_failures "$BUILD")
fi

# A pass that failed without naming a test (a build, a crashed ctest) still counts.
for name in "${failed_passes[@]}"; do
  printf '%s\n' "${failed[@]}" | grep -qF "$name: " || failed+=("$name: failed (exit status above)")
done

stop_load
echo
echo "== test-all ($TIER): summary ($(( $(date +%s) - started )) s in all$([ "$LOAD" -gt 0 ] && echo ", beside $LOAD busy CPU workers"))"
printf '  %s\n' "${summary[@]}"
if [ ${#label_times[@]} -gt 0 ]; then
  echo "  ctest's time per label (the sum of its tests' times, run $JOBS at a time):"
  printf '    %s\n' "${label_times[@]}"
fi
if [ ${#slowest[@]} -gt 0 ]; then
  echo "  the slowest tests of each run:"
  printf '    %s\n' "${slowest[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "  ${#failed[@]} failure(s):"
  printf '    %s\n' "${failed[@]}"
  exit 1
fi
echo "  every pass passed"
