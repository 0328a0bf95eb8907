#!/usr/bin/env bash
# Issue 23, item 4: tools/container/Containerfile builds with podman on a machine that cannot pull
# a base image, and powercut runs a cell in the container as its unprivileged user.
#   container_test.sh SOURCE_DIR BUILD_DIR
# The base image is a bookworm root made by mmdebstrap from the package registry and imported
# with `podman import` (the air-gapped path of docs/install.md); the package is the one cpack makes
# from this build. In the container (no network, no capabilities) the xlog/fdatasync cell on ext4
# with --cache off,on must survive both models; /dev/kvm passed with its group must open read-write
# for the container's user, and not without the group. Podman uses a store of its own under the
# work folder, removed at the end. Needs root, mmdebstrap and podman; skips (exit 77) without them
# or when podman cannot start a container here, printing podman's own error for each set-up tried.
set -euo pipefail
src=$1
build=$2
# shellcheck source=deploy_lib.sh
source "$(dirname "$0")/deploy_lib.sh"
deploy_require_root mmdebstrap podman

work=$(mktemp -d /var/tmp/powercut-container-test-XXXXXX)
podman_in_work=(podman --root "$work/store" --runroot "$work/run" --storage-driver=overlay)
pod() { "${podman_in_work[@]}" "$@"; }
cleanup() {
  pod rm --all --force >/dev/null 2>&1 || true
  pod rmi --all --force >/dev/null 2>&1 || true
  # containers/storage keeps its overlay folder mounted until told to let go.
  if mountpoint -q "$work/store/overlay"; then umount "$work/store/overlay" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# containers.conf for this test only. Measured on a VM like the CI machine: root there lacks
# CAP_SYS_RESOURCE, so podman's default open-file limit (1048576) above the hard limit is refused
# ("setrlimit RLIMIT_NOFILE: Operation not permitted"); the containers get the caller's hard limit
# and 4096 processes (powercut needs tens). No systemd: cgroupfs, events to a file.
write_conf() {
  local runtime=$1
  {
    echo '[containers]'
    echo "default_ulimits = [\"nofile=$(ulimit -Hn):$(ulimit -Hn)\", \"nproc=4096:4096\"]"
    echo '[engine]'
    [[ -n $runtime ]] && echo "runtime = \"$runtime\""
    echo 'cgroup_manager = "cgroupfs"'
    echo 'events_logger = "file"'
  } >"$work/containers.conf"
}
export CONTAINERS_CONF=$work/containers.conf

deb=$(deploy_make_deb "$build" "$work/ctx")
rm -rf "$work/ctx/_CPack_Packages"
echo "package: $deb"

start=$(date +%s)
write_conf ""
# docs/install.md's command: the root as a tar on stdout, imported as the local base image.
nice -n 19 mmdebstrap --variant=apt --quiet bookworm - |
  pod import --quiet - localhost/debian-bookworm >/dev/null
echo "base image (mmdebstrap + podman import): $(($(date +%s) - start)) s"

# Podman's default runtime (crun) first, then runc: crun refuses a hybrid cgroup layout (v1
# controllers with one on the v2 hierarchy, as on this VM: "cgroups in hybrid mode not
# supported"), runc runs there.
reasons=""
runtime_ok=""
for runtime in "" runc; do
  write_conf "$runtime"
  if pod run --rm --network=none localhost/debian-bookworm true 2>"$work/probe.err"; then
    runtime_ok=${runtime:-default}
    break
  fi
  reasons+="  runtime ${runtime:-default (crun)}: $(tr '\n' ' ' <"$work/probe.err")"$'\n'
done
if [[ -z $runtime_ok ]]; then
  echo "skip: podman cannot start a container on this machine:"
  printf '%s' "$reasons"
  exit 77
fi
printf '%s' "$reasons"
echo "runtime: $runtime_ok"

start=$(date +%s)
nice -n 19 "${podman_in_work[@]}" build --quiet --network=host -f "$src/tools/container/Containerfile" \
  -t localhost/powercut "$work/ctx" >/dev/null
echo "podman build: $(($(date +%s) - start)) s"

# The user is unprivileged: not uid 0, no effective capabilities.
ident=$(pod run --rm --network=none --entrypoint sh localhost/powercut \
  -c 'id -u; grep CapEff /proc/self/status; command -v powercut')
echo "$ident"
[[ $(head -n 1 <<<"$ident") != 0 ]]
grep -q 'CapEff:[[:space:]]*0000000000000000' <<<"$ident"
grep -q '^/usr/bin/powercut$' <<<"$ident"

# /dev/kvm as a host with udev has it (0660, group kvm): a node of the same device in the work
# folder, so the host's own node is left as it is. With --group-add the user opens it read-write
# (powercut's probe then decides KVM or TCG), without it the user cannot.
if [[ -c /dev/kvm ]]; then
  kvm_gid=$((60000 + RANDOM % 1000))
  mknod -m 0660 "$work/kvm" c "$((16#$(stat -c '%t' /dev/kvm)))" "$((16#$(stat -c '%T' /dev/kvm)))"
  chgrp "$kvm_gid" "$work/kvm"
  pod run --rm --network=none --device "$work/kvm:/dev/kvm" --group-add "$kvm_gid" \
    --entrypoint sh localhost/powercut -c 'exec 3<>/dev/kvm'
  if pod run --rm --network=none --device "$work/kvm:/dev/kvm" --entrypoint sh \
    localhost/powercut -c 'exec 3<>/dev/kvm' 2>/dev/null; then
    echo "FAIL: /dev/kvm opened without its group"
    exit 1
  fi
  echo "/dev/kvm: opens read-write for the user with --group-add, not without"
fi

# One cell, no network (the guest kernel is in the image), reports to a folder owned by the
# container's user (:U).
mkdir "$work/out"
start=$(date +%s)
status=0
pod run --rm --network=none -v "$work/out:/out:U" localhost/powercut run \
  --workload "powercut-workload xlog run --barrier fdatasync --count 8" \
  --checker "powercut-workload xlog check" --fs ext4 --cache off,on --states 4 \
  --expect off=survives,on=survives --json /out/run.json || status=$?
echo "powercut run in the container: $(($(date +%s) - start)) s, exit $status (load $(cut -d' ' -f1-3 /proc/loadavg))"
[[ $status -eq 0 ]]
python3 - "$work/out/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
models = {m["cache"]: m for m in r["results"]}
assert sorted(models) == ["off", "on"], models.keys()
for name, m in models.items():
    assert m["states"] > 0, (name, m)
    assert m["violations"] == 0, (name, m)
assert r["run"]["status"] == "pass" and r["run"]["verdict"] == "ok", r["run"]
assert r["run"]["unexpected"] == "", r["run"]
print("verdict:", r["run"]["verdict"], {n: (m["states"], m["violations"]) for n, m in models.items()})
PY
echo PASS
