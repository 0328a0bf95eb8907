// How reports name one disk of a set (several recorded disks on one clock, docs/trace.md): a disk
// of a `--disks N` run, or a node of a cluster (`--nodes N`, docs/cluster.md), where node K's disk
// is disk K. Only the words differ: text says "node 2", and the JSON's keys are `nodes`, `node`,
// `dropped_per_node` where a plain set's are `disks`, `disk`, `dropped_per_disk`.
#pragma once

namespace powercut::harness {

enum class SetMember { kDisk, kNode };

// "disk" or "node".
constexpr const char* SetMemberName(SetMember member) {
  return member == SetMember::kNode ? "node" : "disk";
}
// "disks" or "nodes".
constexpr const char* SetMembersName(SetMember member) {
  return member == SetMember::kNode ? "nodes" : "disks";
}

}  // namespace powercut::harness
