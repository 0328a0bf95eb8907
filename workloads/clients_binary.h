// powercut-workload comes as two binaries (workloads/README.md, "Two binaries"): the workloads
// whose client libraries are heavy (rocksdb: librocksdb; postgres: libpq, and through it
// OpenSSL, GnuTLS, Kerberos, LDAP and SASL) run in powercut-workload-clients, so that every other
// run and check starts a program that loads about half as many shared libraries. Under TCG a
// checker's start was most of the time a guest spends on a crash state (docs/run.md, "Where the
// time goes").
//
// powercut-workload parses the command line of every workload itself (help, usage errors and
// `list` are the same in both binaries); the run or check form of rocksdb or postgres then
// replaces the process with powercut-workload-clients, same arguments, same environment, same
// open file descriptors (POWERCUT_ACK_FD among them), before touching the target.
#pragma once

#include <string_view>

namespace powercut::workloads {

inline constexpr char kClientsBinaryName[] = "powercut-workload-clients";

// Kept by main() so that a forwarded run or check is started with the same arguments.
void RememberCommandLine(int argc, char** argv);

// Replaces this process with kClientsBinaryName from this binary's folder, with the remembered
// arguments. Returns only never: if the binary cannot be started, prints why on stderr and exits
// 127 (not there) or 126 (there but not startable), as a shell does, so the tester says the
// checker could not start rather than that the store does not recover (exit 1).
[[noreturn]] void ExecClientsBinary(std::string_view workload);

}  // namespace powercut::workloads
