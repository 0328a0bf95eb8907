// RunMainGuarded: what escapes a program's main becomes a message and its failure exit code.
#include "base/main_guard.h"

#include <new>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"

namespace powercut {
namespace {

TEST(MainGuardTest, ReturnsWhatMainReturns) {
  EXPECT_EQ(RunMainGuarded("prog", 2, [] { return 0; }), 0);
  EXPECT_EQ(RunMainGuarded("prog", 2, [] { return 7; }), 7);
}

TEST(MainGuardTest, AnExceptionBecomesTheProgramsMessageAndFailureCode) {
  testing::internal::CaptureStderr();
  const int code =
      RunMainGuarded("powercut", 1, []() -> int { throw std::runtime_error("disk gone"); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err, "powercut: unexpected error: disk gone\n");
}

TEST(MainGuardTest, ANonStandardExceptionStillEndsInAMessage) {
  testing::internal::CaptureStderr();
  const int code = RunMainGuarded("waldump", 2, []() -> int { throw 42; });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err, "waldump: unexpected error\n");
}

TEST(MainGuardTest, BadAllocIsCaughtToo) {
  testing::internal::CaptureStderr();
  const int code = RunMainGuarded("walbench", 3, []() -> int { throw std::bad_alloc(); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 3);
  EXPECT_NE(err.find("walbench: unexpected error: "), std::string::npos);
}

}  // namespace
}  // namespace powercut
