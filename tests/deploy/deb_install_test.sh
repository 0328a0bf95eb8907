#!/usr/bin/env bash
# Issue 23, item 1: the Debian package installs on a Debian 12 machine that has no build tree and
# gives a working powercut on the PATH. The machine is a fresh bookworm root made by mmdebstrap
# from the package registry (no base image is pulled); the package is the one cpack makes from
# this build (BUILD_DIR); apt-get resolves its Depends from the archive. Inside, as an ordinary
# user: powercut lists the headline's cells with their expected verdicts (the catalog linked in),
# powercut-workload lists the catalog, and the helpers are where the layout says.
#   deb_install_test.sh BUILD_DIR
# Needs root and the Debian mirror; skips (exit 77) without them.
set -euo pipefail
build=$1
# shellcheck source=deploy_lib.sh
source "$(dirname "$0")/deploy_lib.sh"
deploy_require_root mmdebstrap
work=$(mktemp -d /var/tmp/powercut-deb-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
deb=$(deploy_make_deb "$build" "$work/pkg")
echo "package: $deb"
start=$(date +%s)
mmdebstrap --variant=apt --quiet \
  --customize-hook="copy-in $deb /tmp" \
  --customize-hook='chroot "$1" apt-get install -y -qq /tmp/'"$(basename "$deb")"' >/dev/null' \
  --customize-hook='chroot "$1" useradd --create-home --shell /bin/sh pcuser' \
  --customize-hook='chroot "$1" runuser -u pcuser -- sh -c "cd && command -v powercut && powercut matrix --preset headline --list && powercut-workload list | head -n 3 && ls /usr/libexec/powercut"' \
  bookworm "$work/root" 2>&1 | tee "$work/out.txt"
echo "mmdebstrap + apt-get install + checks: $(($(date +%s) - start)) s"
grep -q '^/usr/bin/powercut$' "$work/out.txt"
grep -q 'xlog/fdatasync/ext4' "$work/out.txt"
grep -q 'powercut-vm-agent' "$work/out.txt"
grep -q 'powercut-workload-clients' "$work/out.txt"
if grep -q "$build" "$work/out.txt"; then
  echo "FAIL: the output names the build folder $build"
  exit 1
fi
echo PASS
