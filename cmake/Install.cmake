# `cmake --install` and the Debian package (docs/install.md).
#
# The layout is fixed, because the programs find each other by it at run time
# (base/install_layout.h): programs users run in <prefix>/bin, the helpers they start in
# <prefix>/libexec/powercut, the documentation in <prefix>/share/doc/powercut. GNUInstallDirs'
# variables are not used on purpose: a distribution's LIBEXECDIR override would move the helpers
# where the programs do not look.
set(POWERCUT_INSTALL_BINDIR bin)
set(POWERCUT_INSTALL_HELPERDIR libexec/powercut)
set(POWERCUT_INSTALL_DOCDIR share/doc/powercut)

# A program users run: <prefix>/bin.
function(powercut_program target)
  install(TARGETS ${target} RUNTIME DESTINATION ${POWERCUT_INSTALL_BINDIR})
endfunction()

# A program another program starts: <prefix>/libexec/powercut.
function(powercut_helper target)
  install(TARGETS ${target} RUNTIME DESTINATION ${POWERCUT_INSTALL_HELPERDIR})
endfunction()

# What `cmake --install` installs: the programs of tools/ and bench/walbench only exist with
# POWERCUT_TOOLS. The list of what is installed is kept in step with InstallLayout's table by
# tests/base/install_layout_test.cc (each program is found where it is installed).
powercut_program(powercut-workload)
powercut_program(powercut-vm)
powercut_helper(powercut-workload-clients)
powercut_helper(powercut-vm-agent)
powercut_helper(powercut-fstest-exec)
powercut_helper(powercut-cluster)
if(POWERCUT_TOOLS)
  powercut_program(powercut)
  powercut_program(walbench)
  powercut_program(waldump)
  powercut_program(powercut-demo)
endif()
install(FILES README.md CONTRIBUTING.md DESTINATION ${POWERCUT_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${POWERCUT_INSTALL_DOCDIR}/docs)
# The cluster examples `powercut matrix --preset cluster` runs (FindClusterExamples).
install(DIRECTORY workloads/cluster/ DESTINATION share/powercut/cluster)

# The Debian package: `tools/run.sh package` (cpack -G DEB) writes powercut_<version>_amd64.deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME powercut)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "powercut developers <powercut@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "crash-consistency tester (power cuts under write cache off/on/lying) and a WAL library")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # powercut_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The shared libraries the programs link (librocksdb7.8, libabsl20220623, libfmt9, liburing2 ...)
# are found by dpkg-shlibdeps from the binaries themselves, so the list cannot drift from the
# link lines. The packages below are the programs powercut starts at run time (docs/install.md):
# the VM, the initramfs tools, the file systems' tools, Debian's kernel fetch (apt, dpkg) and
# the database servers of the built-in workloads. No build package (compilers, -dev) is listed.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "qemu-system-x86, qemu-utils, busybox-static, kmod, cpio, zstd, xz-utils, e2fsprogs, \
xfsprogs, btrfs-progs, f2fs-tools, util-linux, procps, dmsetup, apt, dpkg, sqlite3, lmdb-utils, \
postgresql-15, postgresql-client-15, redis-server, etcd-server, etcd-client")
include(CPack)

# Every installed program, so that `cmake --build --target powercut-installed-programs` builds
# what `cmake --install` and cpack need and nothing else (tools/run.sh package).
add_custom_target(powercut-installed-programs)
add_dependencies(powercut-installed-programs powercut-workload powercut-vm
                 powercut-workload-clients powercut-vm-agent powercut-fstest-exec
                 powercut-cluster)
if(POWERCUT_TOOLS)
  add_dependencies(powercut-installed-programs powercut walbench waldump powercut-demo)
endif()
