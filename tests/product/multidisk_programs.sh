# The two-disk programs of the multidisk tests (sourced, POSIX sh): commit i writes a log block
# ("log %04d") on disk 1 with fdatasync and a data block ("dat %04d") on disk 2, then acks.
# Both files are preallocated and synced before the first ack, so every later write overwrites
# data in place (no metadata), as the design brief's barrier table assumes.
# The test's scratch folder $out under /var/tmp, removed when the test ends, also when it is
# stopped (ctest's timeout, ^C): sh runs no EXIT trap when a signal kills it, so each signal
# becomes an exit.
multidisk_scratch() {  # NAME
  out=$(mktemp -d "/var/tmp/powercut-$1.XXXXXX") || exit 2
  trap 'rm -rf "$out"' EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

multidisk_prepare='dd if=/dev/zero of="$POWERCUT_DIR/log" bs=4096 count=8 2>/dev/null &&
dd if=/dev/zero of="$POWERCUT_DIR_2/data" bs=4096 count=8 2>/dev/null && sync'
multidisk_log='printf "log %04d" $i | dd of="$POWERCUT_DIR/log" bs=4096 seek=$i conv=notrunc,fdatasync 2>/dev/null'
# The data block, piped into $multidisk_data plus the data write's own flags.
multidisk_block='{ printf "dat %04d" $i; head -c 4088 /dev/zero; }'
# iflag=fullblock: the block reaches dd's pipe in two writes, and a read that returns only the
# first 8 bytes makes GNU dd write that short block without O_DIRECT and then fsync the file
# (coreutils' iwrite), which turned the O_DIRECT control into a synced one on a loaded machine.
multidisk_data='dd of="$POWERCUT_DIR_2/data" bs=4096 seek=$i count=1 iflag=fullblock'

# The workload: commits COMMITS ("1 2 3"), each with the data write DATA (e.g.
# "$multidisk_block | $multidisk_data conv=notrunc,fdatasync 2>/dev/null"); BEFORE runs first.
multidisk_workload() {  # COMMITS DATA [BEFORE]
  printf '%s' "${3:+$3 && }$multidisk_prepare && for i in $1; do $multidisk_log && $2 && echo \"ack \$i\" >&\$POWERCUT_ACK_FD; done"
}

# The checker: `have i` for each commit of COMMITS whose log and data blocks are both there.
multidisk_checker() {  # COMMITS
  printf '%s' "for i in $1; do"'
l=$(dd if="$POWERCUT_DIR/log" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)
d=$(dd if="$POWERCUT_DIR_2/data" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)
[ "$l" = "$(printf "log %04d" $i)" ] && [ "$d" = "$(printf "dat %04d" $i)" ] && echo "have $i"
done; true'
}
