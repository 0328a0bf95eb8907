# shellcheck shell=bash
# Shared by the tests in tests/deploy that work on the .deb (sourced, not run).

# deploy_require_root TOOL...: skip (exit 77) unless root and every TOOL is on the PATH.
deploy_require_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "skip: needs root"
    exit 77
  fi
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "skip: needs $tool (apt-get install $tool; tools/install-deps.sh installs it)"
      exit 77
    fi
  done
}

# deploy_make_deb BUILD_DIR OUT_DIR: the .deb cpack makes from the build, checked to have no build
# package in Depends; prints its path.
deploy_make_deb() {
  local build=$1 out=$2 deb
  (cd "$build" && cpack -G DEB -B "$out" >/dev/null)
  deb=$(ls "$out"/powercut_*_amd64.deb)
  if dpkg-deb -f "$deb" Depends | tr ',' '\n' | grep -E -- '-dev\b|^ ?(g\+\+|gcc|cmake|clang)' >&2; then
    echo "FAIL: a build package in Depends" >&2
    return 1
  fi
  echo "$deb"
}
