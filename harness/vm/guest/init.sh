#!/bin/busybox sh
# powercut guest init (PID 1 of the initramfs; see docs/vm.md "Boot sequence").
# Loads the base modules and those named by powercut.modules=, mounts the host root read-only over 9p at /host with
# tmpfs where the guest must write, mounts the run folder (job.json, results) at /host/run/powercut,
# runs the guest agent chrooted into the host root (one job, or with powercut.serve=1 job after job
# for a warm guest), and powers off. Every failure is printed on the
# console with the prefix "powercut-init:" so the host can name the failing step.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "powercut-init: kernel up at $(cut -d' ' -f1 /proc/uptime)s"

agent=
wanted=
serve=
for word in $(cat /proc/cmdline); do
  case "$word" in
    powercut.agent=*) agent="${word#powercut.agent=}" ;;
    powercut.modules=*) wanted="${word#powercut.modules=}" ;;
    powercut.keep=*) keep="${word#powercut.keep=}" ;;
    powercut.serve=1) serve=--serve ;;
  esac
done

# Each /modules.d/<name> lists <name> and its dependencies in load order.
for top in virtio_pci virtio_blk virtio_console 9pnet_virtio 9p $(echo "$wanted" | tr ',-' ' _'); do
  [ -f "/modules.d/$top" ] || { echo "powercut-init: note: no module $top in the initramfs"; continue; }
  for m in $(cat "/modules.d/$top"); do
    [ -d "/sys/module/$m" ] && continue
    insmod "/lib/modules/$m.ko" || echo "powercut-init: note: insmod $m failed"
  done
done

fail() {
  echo "powercut-init: FAILED: $*"
  poweroff -f
}

mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /host ||
  fail "step mount-host-root: cannot mount the host root over 9p (tag hostroot)"
mount -t proc proc /host/proc || fail "step mount-host-root: /host/proc"
mount -t sysfs sysfs /host/sys || fail "step mount-host-root: /host/sys"
mount -t devtmpfs devtmpfs /host/dev || fail "step mount-host-root: /host/dev"
# cgroup v2: the agent puts each command in a cgroup of its own to kill what it leaves behind.
# favordynmods (Linux 6.0+): moving a process into a cgroup then skips an RCU grace period, about
# 8 ms of a TCG guest per crash state (docs/run.md, "Where the time goes"); older kernels mount
# without it.
mount -t cgroup2 -o favordynmods cgroup2 /host/sys/fs/cgroup 2>/dev/null ||
  mount -t cgroup2 cgroup2 /host/sys/fs/cgroup || echo "powercut-init: note: no cgroup2"
# Host folders under the tmpfs mount points below (e.g. a build tree in /tmp) stay visible: they
# are held aside with a bind mount and bound back at their own path (powercut.keep=a,b).
keep=$(echo "$keep" | tr ',' ' ')
i=0
for p in $keep; do
  mkdir -p "/keep/$i"
  mount -o bind "/host$p" "/keep/$i" || fail "step keep: cannot bind $p"
  i=$((i + 1))
done
for d in tmp run var/tmp mnt; do
  [ -d "/host/$d" ] && mount -t tmpfs -o mode=1777 tmpfs "/host/$d"
done
i=0
for p in $keep; do
  mkdir -p "/host$p" && mount -o bind "/keep/$i" "/host$p" || fail "step keep: cannot rebind $p"
  i=$((i + 1))
done
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mkdir -p /host/run/powercut
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 powercut /host/run/powercut ||
  fail "step mount-run-folder: cannot mount the run folder over 9p (tag powercut)"

[ -n "$agent" ] || fail "step agent: no powercut.agent= on the kernel command line"
[ -x "/host$agent" ] || fail "step agent: $agent is not an executable in the host root"
echo "powercut-init: ready at $(cut -d' ' -f1 /proc/uptime)s"
if [ -n "$serve" ]; then
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot /host "$agent" --serve
else
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot /host "$agent" /run/powercut/job.json
fi
rc=$?
echo "powercut-init: agent exited with status $rc"
sync
poweroff -f
