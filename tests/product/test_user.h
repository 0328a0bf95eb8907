// An ordinary user made for a test (no sudo, no setuid, no capabilities), a folder of its own
// with its own powercut cache, and running a command as that user: the unprivileged and the
// installed-tree tests share them. Needs root (useradd, runuser).
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "fmt/format.h"
#include "harness/vm/machine/kernel.h"
#include "tests/product/test_util.h"

namespace powercut::product::testing {

// A user made for the test, removed at the end.
class TestUser {
 public:
  explicit TestUser(std::string name) : name_(std::move(name)) {
    RunCommand("userdel " + name_);  // a leftover of an interrupted run
    made_ = RunCommand(fmt::format("useradd --no-create-home --home-dir /nonexistent "
                                   "--shell /bin/sh {}",
                                   name_))
                .exit_code == 0;
  }
  ~TestUser() {
    if (!made_) return;
    RunCommand("userdel --force " + name_);
  }
  bool made() const { return made_; }
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  bool made_ = false;
};

// A user's own folder under `dir` with its own cache (the kernel and initramfs linked from
// root's, so no download) and nothing else of root's it can write; "" on failure.
inline std::string UserHome(const std::string& dir, const TestUser& user) {
  const std::string home = dir + "/user";
  const std::string cache = home + "/cache";
  std::filesystem::create_directories(cache);
  auto root_cache = vm::CacheRoot();
  if (!root_cache.ok()) return "";
  auto r = RunCommand(fmt::format(
      "cp -al {0}/kernel {0}/initramfs {1}/ && chmod 755 {2} && find {3} -type d -exec chown {4} "
      "{{}} +",
      *root_cache, cache, dir, home, user.name()));
  return r.exit_code == 0 ? home : "";
}

// `command` as `user` in `home` (runuser: a login-less switch, no sudo, no setuid bit used by
// powercut itself); TMPDIR and HOME point at the user's folder, the caps it gets are none (the
// output starts with its CapEff line).
inline CommandResult RunAsUser(const TestUser& user, const std::string& home,
                               const std::string& command) {
  return RunCommand(
      fmt::format("cd {0} && runuser -u {1} -- env HOME={0} TMPDIR={0} POWERCUT_CACHE={0}/cache "
                  "sh -c 'grep CapEff /proc/self/status; {2}'",
                  home, user.name(), command));
}

}  // namespace powercut::product::testing
