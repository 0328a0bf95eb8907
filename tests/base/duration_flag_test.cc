#include "base/duration_flag.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace powercut {
namespace {

using ::testing::HasSubstr;

TEST(ParseDurationFlag, TakesAbseilSpellings) {
  EXPECT_EQ(*ParseDurationFlag("--x", "1.5s"), absl::Milliseconds(1500));
  EXPECT_EQ(*ParseDurationFlag("--x", "300ms"), absl::Milliseconds(300));
  EXPECT_EQ(*ParseDurationFlag("--x", "2m"), absl::Minutes(2));
  EXPECT_EQ(*ParseDurationFlag("--x", "1h30m"), absl::Minutes(90));
}

TEST(ParseDurationFlag, ABareNumberIsSecondsOnlyWhereTheFlagSaysSo) {
  EXPECT_EQ(*ParseDurationFlag("--budget", "90", {.bare_seconds = true}), absl::Seconds(90));
  EXPECT_FALSE(ParseDurationFlag("--flakey-for", "90").ok());
}

TEST(ParseDurationFlag, ZeroOnlyWhereAllowed) {
  EXPECT_FALSE(ParseDurationFlag("--x", "0s").ok());
  EXPECT_EQ(*ParseDurationFlag("--x", "0s", {.allow_zero = true}), absl::ZeroDuration());
}

TEST(ParseDurationFlag, RejectsNegativeInfiniteAndNonsenseNamingTheFlag) {
  for (const char* bad : {"-1s", "inf", "soon", "", "5 parsecs", "1.5"}) {
    auto d = ParseDurationFlag("--flakey-for", bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("--flakey-for"));
  }
}

}  // namespace
}  // namespace powercut
