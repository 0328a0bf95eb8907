// The protocol's ack ids under their harness names. base/ack_id.h is the one authority (the
// workloads use it too); harness code may include either.
#pragma once

#include "base/ack_id.h"

namespace powercut::harness {

using ::powercut::AckIdFromMark;
using ::powercut::IsValidAckId;
using ::powercut::kAckMarkPrefix;
using ::powercut::kMaxAckIdBytes;

}  // namespace powercut::harness
