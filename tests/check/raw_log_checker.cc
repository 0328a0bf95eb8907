// A checker command for the raw-device log workload (harness/raw_log.h): prints `have <id>`.
#include "harness/trace/raw_log.h"

int main() { return powercut::harness::RawLogCheckerMain(0); }
