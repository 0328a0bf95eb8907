// What a fatal SIGINT/SIGTERM/SIGHUP must undo before powercut dies: host mounts (a mount outlives
// the process that made it; only its loop device clears itself) and scratch folders (images,
// traces, sockets).
//
// Guarantees:
//  - Register*/Unregister* are called from ordinary code on any thread (lock-free slots, no
//    allocation after registration); RunSignalCleanup() is async-signal-safe: fixed-size tables,
//    only umount2, open/openat, getdents64, fstat, unlinkat, close.
//  - RunSignalCleanup() first detaches every registered mount (umount2 MNT_DETACH), then removes
//    every registered folder recursively (at most kMaxCleanupDepth levels; it never follows
//    symlinks and never descends into another file system, so a mount that could not be detached
//    is left intact rather than emptied).
//  - Only entries registered by the calling process are acted on: a forked child that gets the
//    signal before exec() leaves its parent's registrations alone.
//  - Best effort: at most kMaxCleanupMounts mounts and kMaxCleanupFolders folders at a time, paths
//    of at most kMaxCleanupPath bytes (longer ones are not registered); threads that keep writing
//    while the handler runs may leave a file behind.
//  - SIGKILL cannot be handled: after kill -9 mounts and folders stay (loop devices still clear).
#pragma once

#include <cstddef>
#include <string>

namespace powercut {

inline constexpr int kMaxCleanupMounts = 64;
inline constexpr int kMaxCleanupFolders = 32;
inline constexpr size_t kMaxCleanupPath = 400;
inline constexpr int kMaxCleanupDepth = 8;

void RegisterCleanupMount(const std::string& mountpoint);
void UnregisterCleanupMount(const std::string& mountpoint);
void RegisterCleanupFolder(const std::string& path);
void UnregisterCleanupFolder(const std::string& path);

// Detaches the registered mounts, then removes the registered folders. Async-signal-safe.
void RunSignalCleanup();

// For programs without child processes of their own: SIGINT, SIGTERM and SIGHUP run
// RunSignalCleanup(), then the process dies of the same signal. (powercut and powercut-vm use
// powercut::InstallInterruptHandlers, which kills qemu's process group first, then calls
// RunSignalCleanup.)
void InstallSignalCleanupHandlers();

}  // namespace powercut
