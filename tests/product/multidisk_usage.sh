#!/bin/sh
# Bad --disks input is a usage error (exit 2) before any guest boots: each case must fail at once.
set -u
powercut=$1
failed=0
expect_usage() {  # description, args...
  what=$1
  shift
  start=$(date +%s)
  msg=$("$powercut" run --workload true --checker true "$@" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ $rc -ne 2 ] || [ $took -gt 10 ]; then
    echo "FAIL $what: exit $rc after ${took}s (want 2, before any guest boots): $msg"
    failed=1
  else
    echo "ok   $what: $msg" | head -c 300; echo
  fi
}
expect_usage "--disks 0" --disks 0
expect_usage "--cache-per-disk naming disk 3 of 2" --disks 2 --cache-per-disk 3=on
expect_usage "more --fs values than disks" --disks 2 --fs ext4,xfs,ext4
expect_usage "--fs values for 3 disks on 2... of 3" --disks 3 --fs ext4,xfs
expect_usage "--sector values for 3 disks on 2" --disks 2 --sector 512e,4kn,512n
expect_usage "--sector values for 2 disks on 3" --disks 3 --sector 512e,4kn
expect_usage "an unknown --sector on disk 2" --disks 2 --sector 512e,1k
expect_usage "--disk-size values for 3 disks on 2" --disks 2 --disk-size 1GiB,1GiB,1GiB
expect_usage "a --disk-size too small for mkfs on disk 2" --disks 2 --disk-size 1GiB,1MiB
expect_usage "--flakey-disk 3 of 2" --disks 2 --flakey error_writes --flakey-disk 3
expect_usage "--flakey-disk 0" --disks 2 --flakey error_writes --flakey-disk 0
expect_usage "--flakey-disk 2 of 1" --flakey error_writes --flakey-disk 2
expect_usage "--flakey-disk without --flakey" --disks 2 --flakey-disk 2
# A set with a file system is judged in guests by default, as one disk is; on this host's loop
# mounts only with --check-in host, and a live cut's images always: as an ordinary user (no
# CAP_SYS_ADMIN) either is said before a guest boots, not after the recording. setpriv drops
# root's capabilities.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  for case in "--check-in host" "--live-cuts 1"; do
    start=$(date +%s)
    # shellcheck disable=SC2086
    msg=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
          "$powercut" run --workload true --checker true --disks 2 --fs ext4 $case 2>&1)
    rc=$?
    took=$(( $(date +%s) - start ))
    case "$rc:$took:$msg" in
      2:?:*"need root"*|2:?:*"needs root"*) echo "ok   --disks 2 $case as an ordinary user: $msg" ;;
      *) echo "FAIL --disks 2 $case as an ordinary user: exit $rc after ${took}s (want 2 at once): $msg"
         failed=1 ;;
    esac
  done
fi
exit $failed
