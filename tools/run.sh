#!/usr/bin/env bash
# The README's two commands, and what CI adds to them.
#   tools/run.sh main   the main job (installs what is missing, builds, runs)
#   tools/run.sh test   the test suite (installs what is missing, builds, runs ctest)
#   tools/run.sh ci     test + ASan/UBSan unit tests + TSan concurrency tests + 60 s of fuzzing
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  bash tools/install-deps.sh
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1" ${2:+--target $2}
}

case "${1:-}" in
  main)
    shift
    build default
    exec build/default/tools/demo/powercut-demo "$@"
    ;;
  test)
    build default
    ctest --preset default
    ;;
  ci)
    "$0" test
    echo "== ASan+UBSan unit tests"
    build asan
    ctest --preset asan
    echo "== TSan concurrency tests"
    # Only the concurrency-labelled tests run under TSan: build just those.
    build tsan "wal_concurrency_test wal_crash_test wal_segment_switch_test harness_engine_test workloads_unit_test"
    ctest --preset tsan
    echo "== fuzzing, 60 s per target"
    build fuzz
    for f in build/fuzz/tests/fuzz/*_fuzzer; do
      [[ -x $f ]] || continue
      name=$(basename "$f" _fuzzer)
      corpus=$(mktemp -d)
      cp -r "tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
      "$f" -max_total_time=60 -timeout=10 -rss_limit_mb=2048 "$corpus" 2>&1 | tail -n 3
      rm -rf "$corpus"
    done
    ;;
  *)
    echo "usage: tools/run.sh main|test|ci" >&2
    exit 2
    ;;
esac
