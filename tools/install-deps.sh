#!/usr/bin/env bash
# Installs the Debian 12 packages powercut needs. Idempotent: installs only what is missing.
#   tools/install-deps.sh        everything: the test suite, CI, lint, every workload
#   tools/install-deps.sh main   only what the main job (tools/run.sh main) builds and runs: the
#                                libraries the programs link, qemu and the guest's tools; no
#                                compilers beyond g++, no test, lint or browser packages, no
#                                database servers the headline does not start
#   tools/install-deps.sh package  what tools/run.sh package builds the .deb with
set -euo pipefail

# The main job: g++ and CMake, the -dev packages every program of the main build links
# (cmake/Dependencies.cmake needs all of them to configure), the VM and the guest's tools.
main_packages=(
  g++ make cmake pkg-config
  libabsl-dev libfmt-dev nlohmann-json3-dev libcli11-dev librocksdb-dev liblzma-dev zlib1g-dev
  libzstd-dev libsqlite3-dev liburing-dev libisal-dev libxxhash-dev libpq-dev liblmdb-dev
  qemu-system-x86 qemu-utils busybox-static kmod cpio zstd xz-utils e2fsprogs util-linux procps
)

packages=(
  build-essential cmake pkg-config git clang clang-format clang-tidy libclang-rt-14-dev
  libabsl-dev libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev googletest
  libbenchmark-dev librocksdb-dev liblzma-dev zlib1g-dev libzstd-dev libsqlite3-dev sqlite3 liburing-dev libisal-dev libxxhash-dev
  qemu-system-x86 qemu-utils busybox-static kmod cpio zstd xz-utils
  e2fsprogs xfsprogs btrfs-progs f2fs-tools util-linux procps python3 python3-yaml dmsetup chromium
  # tests/deploy: the .deb on a fresh root (mmdebstrap), a real Slurm (slurm-wlm, munge), the
  # container recipe (podman; runc too: crun refuses a hybrid cgroup layout, docs/install.md)
  mmdebstrap slurm-wlm munge dpkg-dev file podman runc
  # The database workloads (docs/your-database.md): the servers run in the guest from the host's
  # root, so they are installed here; liblmdb-dev is linked into powercut-workload,
  # libpq-dev into powercut-workload-clients.
  postgresql-15 postgresql-client-15 libpq-dev redis-server liblmdb-dev lmdb-utils
  etcd-server etcd-client
  # The cluster examples (workloads/cluster/, docs/cluster.md): a 3-node NATS JetStream; etcd
  # is above.
  nats-server
)

case "${1:-all}" in
  all) ;;
  main) packages=("${main_packages[@]}") ;;
  # The .deb: the main job's build packages plus dpkg-dev (dpkg-shlibdeps computes the
  # library dependencies) and the programs the installed tree's test starts.
  package) packages=("${main_packages[@]}" dpkg-dev file) ;;
  *)
    echo "usage: tools/install-deps.sh [all|main|package]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The VM fetches Debian's kernel with `apt-get download`, which needs the package lists.
need_lists=0
apt-cache show linux-image-amd64 >/dev/null 2>&1 || need_lists=1

if ((${#missing[@]} || need_lists)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}" >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
