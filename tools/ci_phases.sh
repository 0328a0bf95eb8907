#!/usr/bin/env bash
# Prints where CI's time goes: the steps of `tools/run.sh ci`, one after another, each under
# /usr/bin/time (wall, user, sys; the CPU times are what the machine's load changes least), in the
# checkout it is run from, without ccache (as CI builds). Meant for a clean clone:
#   git clone <repo> /tmp/ci-clone && bash /tmp/ci-clone/tools/ci_phases.sh > phases.log 2>&1
# then `grep '^==' phases.log`. docs/results.md, "CI time", has a run.
set -u
cd "$(dirname "$0")/.."
unset CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER
phase() {
  local name=$1
  shift
  echo "== $name start $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  /usr/bin/time -f "== $name: %e s wall %U user %S sys rc=%x" "$@"
}
# The targets tools/run.sh ci builds for each sanitizer (read from it, so the two never differ).
targets() {
  python3 -c 'import re, sys; print(re.search(r"(?:build |)" + sys.argv[1] + r"(?:_targets=| )\"([^\"]*)\"",
      open("tools/run.sh").read()).group(1).replace("\\\n", " "))' "$1"
}
phase deps bash tools/install-deps.sh all
phase configure cmake --preset default
phase build cmake --build --preset default
phase suite ctest --preset default
phase scheduler ctest --test-dir build/default -L scheduler --output-on-failure
phase asan-configure cmake --preset asan
# shellcheck disable=SC2046
phase asan-build cmake --build --preset asan --target $(targets asan)
phase asan-tests ctest --preset asan
phase tsan-configure cmake --preset tsan
# shellcheck disable=SC2046
phase tsan-build cmake --build --preset tsan --target $(targets tsan)
phase tsan-tests ctest --preset tsan
phase fuzz-configure cmake --preset fuzz
# shellcheck disable=SC2046
phase fuzz-build cmake --build --preset fuzz --target $(targets fuzz)
echo "== done $(date +%T)"
