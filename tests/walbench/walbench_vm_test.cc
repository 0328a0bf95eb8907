// `walbench cache` in the VM (label "vm"): boots the crash domain's guest twice, with the virtual
// drive write-back and write-through, runs walbench's two cache workloads in it with tiny sizes,
// and checks that both modes produced positive numbers and that the guest saw the drive's cache as
// the host configured it. Skips (with the reason) only when the guest cannot be prepared.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/temp_dir.h"
#include "bench/walbench/vm_cache_bench.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::walbench {
namespace {

using powercut::testing::TempDir;

TEST(WalbenchCacheVmTest, WriteBackAndWriteThroughDrivesBothMeasuredAndSeenByTheGuest) {
  auto env = vm::PrepareVm(POWERCUT_VM_AGENT_PATH);
  if (!env.ok()) GTEST_SKIP() << "the guest cannot be prepared: " << env.status().message();
  TempDir host_dir;
  ASSERT_FALSE(host_dir.path().empty());

  VmCacheOptions options;
  options.workload.seq_write_bytes = 4ull << 20;
  options.workload.commit_seconds = 0.3;
  options.workload.commit_file_bytes = 1ull << 20;
  options.reps = 1;
  options.host_dir = host_dir.path();
  options.walbench = POWERCUT_WALBENCH_PATH;
  options.agent_hint = POWERCUT_VM_AGENT_PATH;
  options.timeout_seconds = 120;
  auto report = RunCacheInVm(options);
  ASSERT_TRUE(report.ok()) << report.status();

  ASSERT_EQ(report->runs.size(), 2u);
  int on = 0;
  int off = 0;
  for (const VmCacheRun& run : report->runs) {
    SCOPED_TRACE(run.qemu_cache);
    EXPECT_GT(run.result.seq_write_mb_per_sec, 0);
    EXPECT_GT(run.result.commits_per_sec, 0);
    EXPECT_GT(run.result.commit_p50_us, 0);
    // What the agent read from the guest's sysfs, and what walbench in the guest reported.
    const std::string expected = run.cache_on ? "write back" : "write through";
    EXPECT_EQ(run.guest_write_cache, expected);
    EXPECT_EQ(run.result.write_cache, expected);
    (run.cache_on ? on : off)++;
  }
  EXPECT_EQ(on, 1);
  EXPECT_EQ(off, 1);
  EXPECT_GT(report->ratios.seq_write, 0);
  EXPECT_GT(report->ratios.commits, 0);

  const std::string text = FormatVmCacheReport(*report);
  EXPECT_NE(text.find("cache on"), std::string::npos) << text;
  EXPECT_NE(text.find("cache off"), std::string::npos) << text;
  const nlohmann::json json = VmCacheReportToJson(options, *report);
  EXPECT_EQ(json["runs"].size(), 2u);
  EXPECT_GT(json["cache_on"]["commits_per_sec"].get<double>(), 0);
  EXPECT_GT(json["cache_off"]["seq_write_mb_per_sec"].get<double>(), 0);

  // Only the scratch folder walbench made is gone; nothing else was left in the host folder.
  EXPECT_TRUE(std::filesystem::is_empty(host_dir.path()));
}

}  // namespace
}  // namespace powercut::walbench
