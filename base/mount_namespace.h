// powercut's own mount namespace: host loop mounts of crash states that no one outside sees and
// that the kernel removes when powercut and its children are gone, even after a SIGKILL no signal
// handler sees (docs/boot-recovery.md, "Host mounts live in powercut's own mount namespace").
#pragma once

namespace powercut {

// Moves the process into a mount namespace of its own (unshare(CLONE_NEWNS)) that still receives
// the host's mount events but sends none back (/ made a recursive slave). Mounts made afterwards
// are seen by this process and its children (boot-path tools, checkers) only, and are unmounted
// when the last process in the namespace exits. Call it first thing in main: a thread's unshare
// moves that thread alone, so with other threads running it does nothing. Returns whether the
// process moved; false (nothing changed) without CAP_SYS_ADMIN, where no host mount can be made
// anyway.
bool EnterOwnMountNamespace();

}  // namespace powercut
