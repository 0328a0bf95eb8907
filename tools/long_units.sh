#!/bin/sh
# Functions longer than $1 lines (default 80) and source files over 500 lines in harness/,
# workloads/ and tools/ (issue 25's bound on long units). Needs universal-ctags
# (apt-get install universal-ctags); run from the repository root. Prints nothing when all fit.
lim=${1:-80}
ctags -R --c++-kinds=f --fields=+ne --output-format=json --languages=C++ -f - \
  harness workloads tools 2>/dev/null |
  python3 -c '
import json, sys
limit = int(sys.argv[1])
for line in sys.stdin:
    tag = json.loads(line)
    if "end" in tag and tag["end"] - tag["line"] + 1 > limit:
        print(tag["end"] - tag["line"] + 1, tag["path"], tag["name"])
' "$lim" | sort -rn
find harness workloads tools \( -name "*.cc" -o -name "*.h" \) -exec wc -l {} + |
  awk '$1 > 500 && $2 != "total"'
