// The VM tests' temporary folder: the shared TempDir (base/temp_dir.h) under /tmp, where
// these tests always made it: unix sockets go in it (a socket path must fit sun_path's 108 bytes)
// and only the host reads it.
#pragma once

#include "base/temp_dir.h"

namespace powercut::vm {

class VmTempDir : public powercut::testing::TempDir {
 public:
  VmTempDir() : powercut::testing::TempDir("/tmp", "powercut-vmtest") {}
};

}  // namespace powercut::vm
