// Runs every file of tests/state/testdata/ (one test per file) through StateCases and diffs each
// case's output with the expected one. `--rewrite` writes the actual outputs into the files
// instead (tests/state/README.md).
#include "tests/state/state_cases.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/state/datadriven.h"

namespace powercut::harness {
namespace {

bool rewrite = false;

std::vector<std::string> TestFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(POWERCUT_STATE_TESTDATA)) {
    if (e.is_regular_file()) files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Testdata : public ::testing::TestWithParam<std::string> {};

TEST_P(Testdata, Run) {
  const std::string path = std::string(POWERCUT_STATE_TESTDATA) + "/" + GetParam();
  StateCases cases;
  int run = 0;
  absl::Status s = powercut::testing::RunTestFile(
      path, rewrite,
      [&](const powercut::testing::TestCase& c) {
        ++run;
        return cases.Run(c);
      },
      [](const powercut::testing::TestCase& c, const std::string& actual) {
        ADD_FAILURE_AT(c.file.c_str(), c.line)
            << c.Where() << "\nexpected:\n"
            << c.expected << "actual:\n"
            << actual << "(run this test with --rewrite to take the actual output)";
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_GT(run, 0) << path << " holds no case";
}

INSTANTIATE_TEST_SUITE_P(StateCases, Testdata, ::testing::ValuesIn(TestFiles()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace powercut::harness

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rewrite") == 0) {
      powercut::harness::rewrite = true;
    } else {
      std::fprintf(stderr, "%s: unknown argument %s (expected --rewrite and gtest flags)\n",
                   argv[0], argv[i]);
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}
