#!/usr/bin/env bash
# Proves each rule of layering.sh: every tests/lint/fixtures/rN-* tree breaks rule RN and must be
# rejected with it; ok-* trees break none and must pass.
set -u
here=$(cd "$(dirname "$0")" && pwd)
failures=0
for dir in "$here"/fixtures/*/; do
  name=$(basename "$dir")
  out=$("$here/layering.sh" "$dir" 2>&1)
  rc=$?
  case $name in
    ok-*) want_rc=0 want="layering: ok" ;;
    r*) want_rc=1 want="layering $(echo "${name%%-*}" | tr r R):" ;;
  esac
  if [ $rc = $want_rc ] && grep -qF "$want" <<<"$out"; then echo "ok: $name"
  else echo "FAIL: $name: exit $rc, want $want_rc and '$want': $out"; failures=$((failures + 1)); fi
done
[ $failures = 0 ]
