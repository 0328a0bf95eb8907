# My database's commit log, written the way the database writes it: the log is
# preallocated with real data and made durable once, then every commit overwrites
# the next 4 KiB record in place with O_DIRECT|O_DSYNC and is acknowledged to the
# client as soon as pwrite returns.
creat wal.log
write wal.log 0 65536
fsync wal.log
fsync .
dwrite wal.log 0 4096 dsync
dwrite wal.log 4096 4096 dsync
dwrite wal.log 8192 4096 dsync
dwrite wal.log 12288 4096 dsync

# Its control file: rewritten with O_SYNC, then a note appended with RWF_DSYNC.
creat control
fsync .
write control 0 512 sync
write control 512 512 rwf_dsync
