# All dependencies come from Debian 12 packages (tools/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)

# ISA-L's crc32_iscsi is CRC32C (Castagnoli); libisal ships no CMake config, only pkg-config.
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)

pkg_check_modules(URING IMPORTED_TARGET liburing)
if(URING_FOUND)
  set(POWERCUT_HAVE_URING 1)
else()
  set(POWERCUT_HAVE_URING 0)
  message(STATUS "liburing not found: the io_uring barrier is compiled out")
endif()

if(POWERCUT_TESTS)
  find_package(GTest REQUIRED)
endif()

# RocksDB (librocksdb-dev) ships a CMake config on Debian 12; fall back to pkg-config.
find_package(RocksDB CONFIG QUIET)
if(NOT RocksDB_FOUND)
  pkg_check_modules(ROCKSDB IMPORTED_TARGET rocksdb)
endif()
find_package(SQLite3 QUIET)
# The database workloads (workloads/): libpq (libpq-dev) talks to the PostgreSQL server, LMDB
# (liblmdb-dev) is linked in. Both ship only pkg-config files on Debian 12.
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)
find_package(benchmark QUIET)
# The guest kernel's compressed payload is unpacked on the host for a PVH boot
# (harness/vm/machine/pvh_kernel.h): xz (Debian's kernels), gzip and zstd.
find_package(LibLZMA REQUIRED)
find_package(ZLIB REQUIRED)
find_package(zstd CONFIG REQUIRED)
