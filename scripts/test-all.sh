#!/usr/bin/env bash
# `make test`: every pass, whatever an earlier one did, then one summary of all failures.
#
#   1. the main build (-Werror) and every ctest test (unit, cli, live, integration, qemu, ...)
#   2. the mutation check (tests/mutation/mutate.py): deliberate breakages of the planner, the
#      binder, watch's rules and loop and the exit policy, each of which the suite must fail on
#   3. the AddressSanitizer + UndefinedBehaviorSanitizer build (ASAN_BUILD) and its unit, cli and
#      faults tests
#   4. the fuzz targets' regression inputs (scripts/fuzz.sh regress)
#
# A failing pass no longer hides the next: each runs, its wall time and failures are kept, and
# the script exits 1 at the end if any failed, naming each failed test. ctest's own per-label
# time (the sum of its tests' times, under "Label Time Summary") is repeated in the summary.
#
# GPUBIND_TEST_LOAD=N runs N busy CPU workers (stress-ng) beside the whole run: a shared CI
# machine's load, for tests that must hold under it (`make test-load`).
#
# Usage: test-all.sh   (from the repository root; BUILD, ASAN_BUILD, FUZZ_BUILD, JOBS, CMAKE_ARGS
#                        as the Makefile passes them)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ASAN_BUILD=${ASAN_BUILD:-build-asan}
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
LOAD=${GPUBIND_TEST_LOAD:-0}
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

run_ctest() {  # DIR LOG [ctest args]
  local dir=$1 log=$2; shift 2
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
  (cd "$dir" && ctest --output-on-failure -j"$JOBS" "$@") 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  keep_label_times "$(basename "$dir")" "$log"
  return $rc
}

mkdir -p "$BUILD"
if pass "build ($BUILD)" "$MAKE" --no-print-directory build; then
  pass "ctest ($BUILD)" run_ctest "$BUILD" "$BUILD/ctest.log" || while IFS= read -r t; do failed+=("ctest ($BUILD): $t"); done < <(ctest_failures "$BUILD")
  pass "mutation check ($BUILD)" /usr/bin/python3 tests/mutation/mutate.py "$BUILD" \
    || failed+=("mutation check ($BUILD): a breakage survived or no longer applies (see 'mutation:' lines above)")
else
  failed+=("build ($BUILD): did not build; its tests did not run")
fi

if pass "build ($ASAN_BUILD)" "$MAKE" --no-print-directory build-asan; then
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  pass "ctest ($ASAN_BUILD)" run_ctest "$ASAN_BUILD" "$ASAN_BUILD/ctest.log" -L 'unit|cli|faults' \
    || while IFS= read -r t; do failed+=("ctest ($ASAN_BUILD): $t"); done < <(ctest_failures "$ASAN_BUILD")
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  failed+=("build ($ASAN_BUILD): did not build; its tests did not run")
fi

pass "fuzz regression" "$MAKE" --no-print-directory fuzz-regress || failed+=("fuzz regression: see its output above")

# A pass that failed without naming a test (a build, a crashed ctest) still counts.
for name in "${failed_passes[@]}"; do
  printf '%s\n' "${failed[@]}" | grep -qF "$name: " || failed+=("$name: failed (exit status above)")
done

stop_load
echo
echo "== test-all: summary ($(( $(date +%s) - started )) s in all$([ "$LOAD" -gt 0 ] && echo ", beside $LOAD busy CPU workers"))"
printf '  %s\n' "${summary[@]}"
if [ ${#label_times[@]} -gt 0 ]; then
  echo "  ctest's time per label (the sum of its tests' times, run $JOBS at a time):"
  printf '    %s\n' "${label_times[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "  ${#failed[@]} failure(s):"
  printf '    %s\n' "${failed[@]}"
  exit 1
fi
echo "  every pass passed"
