#!/usr/bin/env bash
# The README's two commands, and what CI adds to them.
#   tools/run.sh main   the main job: the headline crash matrix (installs, builds, runs)
#   tools/run.sh demo   the WAL demo: every barrier under a simulated power cut, no VM
#   tools/run.sh test   the test suite (installs what is missing, builds, runs ctest)
#   tools/run.sh ci     test + ASan/UBSan unit tests + TSan concurrency tests + 60 s of fuzzing
#   tools/run.sh lint   clang-format and clang-tidy over every project source (CONTRIBUTING.md)
#   tools/run.sh package  the Debian package build/package/powercut_<version>_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."

# build PRESET [TARGETS] [DEPS]: installs the packages (DEPS: tools/install-deps.sh's set), then
# configures and builds the preset (its build preset's targets unless TARGETS are given).
build() {
  bash tools/install-deps.sh "${3:-all}"
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1" ${2:+--target $2}
}

case "${1:-}" in
  main)
    # The headline crash matrix (docs/results.md): every barrier, RocksDB and SQLite, recorded in a
    # qemu guest on ext4 and replayed under cache off / on / lying. Reports land in build/headline/.
    # Exit 0: every cell matched its expected verdict; 1: some cell did not; 2: could not run.
    # The `main` preset builds only the four programs the matrix runs, optimized, without the
    # tests and without debug information (docs/results.md, "Fresh machine").
    shift
    build main "" main
    mkdir -p build/headline
    exec build/main/tools/powercut/powercut matrix --preset headline \
      --json build/headline/matrix.json --junit build/headline/matrix.xml \
      --html build/headline/matrix.html "$@"
    ;;
  demo)
    shift
    build default
    exec build/default/tools/demo/powercut-demo "$@"
    ;;
  test)
    build default
    ctest --preset default
    ;;
  ci)
    # The sanitizer builds start first, in the background at the lowest priority: they take the
    # CPU that the default build and the suite leave idle (the suite's VM tests keep two cores
    # about two-thirds busy, docs/results.md "CI time") instead of adding their minutes after it.
    # Their output is printed, and their result counted, after the suite.
    asan_targets="wal_posix_env_test wal_fault_injection_env_test wal_test wal_concurrency_test \
      wal_crash_test wal_segment_switch_test wal_hot_path_test segment_reader_test recovery_test \
      fault_recovery_test open_and_recover_test harness_trace_test harness_state_cases_test \
      harness_disk_set_states_test harness_engine_test harness_fs_check_test harness_kernel_trace_test \
      harness_boot_recovery_test \
      vm_unit_test \
      workloads_unit_test"
    # Only the concurrency-labelled tests run under TSan: build just those.
    tsan_targets="wal_concurrency_test wal_crash_test wal_segment_switch_test harness_engine_test \
      workloads_unit_test vm_concurrency_test"
    bash tools/install-deps.sh all  # once, before two builds could run apt at the same time
    sanitizer_log=$(mktemp)
    # A session of its own, so that a failing suite does not leave it building. A new session is
    # a new scheduler autogroup, which the kernel shares the CPU with as with any other session,
    # whatever its processes' nice values: the group itself gets the lowest priority.
    setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
      cmake --preset asan >/dev/null && cmake --preset tsan >/dev/null &&
      nice -n 19 cmake --build --preset asan --target $1 &&
      nice -n 19 cmake --build --preset tsan --target $2' _ "$asan_targets" "$tsan_targets" \
      >"$sanitizer_log" 2>&1 &
    sanitizer_pid=$!
    trap 'kill -- -"$sanitizer_pid" 2>/dev/null || true' EXIT
    "$0" test
    # The Slurm test spends most of its 3-4 minutes waiting on slurmctld and slurmd (83 CPU-s of
    # 212 s, docs/results.md "CI time"): it runs beside the sanitizer builds and tests, and its
    # output is printed, and its result counted, once they are done.
    echo "== a real Slurm runs the nightly job (tests/deploy/slurm_test.sh), in the background"
    slurm_log=$(mktemp)
    ctest --test-dir build/default -L scheduler --output-on-failure >"$slurm_log" 2>&1 &
    slurm_pid=$!
    echo "== the sanitizer builds (started before the suite)"
    sanitizer_rc=0
    wait "$sanitizer_pid" || sanitizer_rc=$?
    tail -n 20 "$sanitizer_log"
    rm -f "$sanitizer_log"
    [[ $sanitizer_rc -eq 0 ]] || { echo "the sanitizer builds failed (exit $sanitizer_rc)" >&2; exit 1; }
    echo "== ASan+UBSan unit tests"
    # The library suites (the VM, product and tool suites drive whole programs and run above).
    # The engine tests start a checker per crash state (hundreds per test); it is built without
    # the sanitizers (tests/check/CMakeLists.txt), which took three of them from 94-198 s each
    # under ASan to 4-16 s (docs/results.md, "CI time").
    ctest --preset asan
    echo "== TSan concurrency tests"
    ctest --preset tsan
    echo "== the Slurm test (started after the suite)"
    slurm_rc=0
    wait "$slurm_pid" || slurm_rc=$?
    cat "$slurm_log"
    rm -f "$slurm_log"
    [[ $slurm_rc -eq 0 ]] || { echo "the Slurm test failed (exit $slurm_rc)" >&2; exit 1; }
    echo "== fuzzing, 60 s per target, the targets side by side (one a core)"
    build fuzz "wal_recovery_fuzzer trace_reader_fuzzer"
    fuzz_pids=()
    for f in build/fuzz/tests/fuzz/*_fuzzer; do
      [[ -x $f ]] || continue
      name=$(basename "$f" _fuzzer)
      (
        corpus=$(mktemp -d)
        cp -r "tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
        rc=0
        out=$("$f" -max_total_time=60 -timeout=10 -rss_limit_mb=2048 "$corpus" 2>&1) || rc=$?
        rm -rf "$corpus"
        echo "-- $name (exit $rc)"
        echo "$out" | tail -n 3
        exit $rc
      ) &
      fuzz_pids+=($!)
    done
    for p in "${fuzz_pids[@]}"; do wait "$p"; done
    ;;
  package)
    # The installed tree (cmake/Install.cmake) as a .deb whose Depends are the runtime packages
    # only (docs/install.md). Built from the `main` configuration, every installed program.
    build main powercut-installed-programs package
    (cd build/main && cpack -G DEB -B "$PWD/../package" >/dev/null)
    ls build/package/powercut_*.deb
    ;;
  lint)
    # Not part of ci: clang-tidy parses every file as a compiler would (CONTRIBUTING.md: about
    # 70 min on 2 loaded cores).
    # The `lint` preset is configured only: its compile database names every source file by
    # itself (a unity build's names the batches), and every generated source is written at
    # configure time.
    bash tools/install-deps.sh all
    cmake --preset lint >/dev/null
    git ls-files '*.cc' '*.h' | xargs clang-format --dry-run -Werror
    # Every project source the compile database names (not generated ones under build/); any
    # finding fails the step.
    python3 -c 'import json, os; print("\n".join(sorted({e["file"] for e in json.load(open(
        "build/lint/compile_commands.json")) if not os.path.relpath(e["file"]).startswith(
        "build/")})))' |
      xargs -P "$(nproc)" -n 1 clang-tidy -p build/lint --quiet --warnings-as-errors='*'
    ;;
  *)
    echo "usage: tools/run.sh main|demo|test|ci|lint|package" >&2
    exit 2
    ;;
esac
