# A small key-value store, tested the way its author would: a write-ahead log appended with
# O_DSYNC and RWF_DSYNC, a table file preallocated with real data and fsynced, then pages
# overwritten in place with O_DIRECT and a synchronous flag, and a manifest written with O_SYNC
# into a temporary file and renamed over the old one.
mkdir db
fsync .

# The write-ahead log: every append is synchronous, nothing else persists it.
creat db/wal
fsync db
write db/wal 0 512 dsync
write db/wal 512 700 dsync
write db/wal 1212 3000 rwf_dsync

# The table: preallocated, made durable, then pages updated in place.
creat db/table
write db/table 0 65536
fsync db/table
fsync db
dwrite db/table 8192 4096 dsync
dwrite db/table 0 4096 rwf_dsync
dwrite db/table 61440 4096 sync

# The manifest: a temporary file written O_SYNC, renamed into place, the folder fsynced.
creat db/MANIFEST.tmp
write db/MANIFEST.tmp 0 200 sync
rename db/MANIFEST.tmp db/MANIFEST
fsync db

# The log goes on.
write db/wal 4212 100 dsync
