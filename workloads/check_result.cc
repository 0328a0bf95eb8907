#include "workloads/check_result.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

namespace powercut::workloads {

void CheckResult::Print(const std::string& name, std::FILE* out, std::FILE* err) const {
  for (const std::string& note : notes) fmt::print(err, "{}: {}\n", name, note);
  for (const std::string& id : have) fmt::print(out, "have {}\n", id);
  for (const std::string& id : corrupt) fmt::print(out, "corrupt {}\n", id);
  std::fflush(out);
  std::fflush(err);
}

bool OnReadOnlyMount(const std::string& path) {
  struct statvfs st;
  return ::statvfs(path.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY) != 0;
}

}  // namespace powercut::workloads
