#include "wal/env.h"

#include "base/status_macros.h"

namespace powercut::wal {

// Without io_uring the linked pair degrades to its two halves; the durability promise is the same
// (the write is followed by an fdatasync that covers it), only the submission is not batched.
absl::Status File::WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) {
  RETURN_IF_ERROR(Write(offset, data));
  return Sync(SyncKind::kFdatasync);
}

}  // namespace powercut::wal
