#!/usr/bin/env bash
# tools/nightly/slurm.sh --baseline FILE without a cluster (issue 34): fake sbatch and squeue run
# each --wrap script at once (the array's tasks one after another), a fake powercut writes shard
# reports, merges into a report naming the night and records each diff it is asked for. Checks
# that the first night only keeps its report, the second diffs last night's against tonight's
# into OUT/diff.* (the section into OUT/matrix.html), exits with the diff's regression and keeps
# tonight's report, and a night whose merge wrote no report neither diffs nor replaces the
# baseline. The real diff is tests/diff's; the real Slurm run is slurm_test.sh.
#   slurm_baseline_test.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d /tmp/powercut-slurm-baseline-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat > "$work/bin/sbatch" <<'FAKE'
#!/usr/bin/env bash
wrap="" array="" out=""
for a in "$@"; do
  case "$a" in --wrap=*) wrap=${a#--wrap=} ;; --array=*) array=${a#--array=} ;; --output=*) out=${a#--output=} ;; esac
done
if [[ -n $array ]]; then
  for k in $(seq "${array#1-}"); do SLURM_ARRAY_TASK_ID=$k sh -c "$wrap" > "${out//%a/$k}" 2>&1; done
  echo 100
  exit 0
fi
set +e
sh -c "$wrap" > "$out" 2>&1
rc=$?
echo 101
exit $rc
FAKE
printf '#!/bin/sh\nexit 0\n' > "$work/bin/squeue"
cat > "$work/bin/powercut" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >> "$FAKE_CALLS"
case "$1" in
  matrix) while (($#)); do [[ $1 == --json ]] && echo '{"shard": true}' > "$2"; shift; done ;;
  merge) [[ -z $FAKE_NIGHT ]] && exit 2
         echo "{\"night\": \"$FAKE_NIGHT\"}" ;;
  diff) echo "diff $2 $3"; exit "$FAKE_DIFF_EXIT" ;;
esac
FAKE
chmod +x "$work/bin/"*
export PATH="$work/bin:$PATH" POWERCUT="$work/bin/powercut" FAKE_CALLS="$work/calls"
fail() { echo "FAIL: $*"; exit 1; }
night() {  # night NAME MERGE_NIGHT DIFF_EXIT: runs one night, prints its exit status
  set +e
  FAKE_NIGHT=$2 FAKE_DIFF_EXIT=$3 bash "$src/tools/nightly/slurm.sh" --shards 2 --out "$work/$1" \
    --baseline "$work/kept/last.json" --wait -- matrix --preset headline > "$work/$1.log" 2>&1
  echo $?
  set -e
}

rc=$(night n1 one 0)
[[ $rc == 0 ]] || fail "first night exit $rc: $(cat "$work/n1.log")"
grep -q "no baseline yet" "$work/n1/diff.txt" || fail "first night: $(cat "$work/n1/diff.txt")"
cmp -s "$work/n1/matrix.json" "$work/kept/last.json" || fail "first night's report not kept"
! grep -q "^diff" "$work/calls" || fail "first night ran a diff"

rc=$(night n2 two 1)
[[ $rc == 1 ]] || fail "a regression since last night: exit $rc, not 1: $(cat "$work/n2.log")"
grep -qx "diff $work/kept/last.json $work/n2/matrix.json --json $work/n2/diff.json --markdown $work/n2/diff.md --html $work/n2/diff.html --into-html $work/n2/matrix.html" \
  "$work/calls" || fail "second night's diff: $(grep ^diff "$work/calls")"
grep -q "diff $work/kept/last.json" "$work/n2/diff.txt" || fail "diff.txt: $(cat "$work/n2/diff.txt")"
grep -q '"two"' "$work/kept/last.json" || fail "tonight's report did not replace the baseline"

rc=$(night n3 "" 0)
[[ $rc == 2 ]] || fail "a merge that wrote no report: exit $rc, not 2"
[[ ! -e $work/n3/diff.txt ]] || fail "diffed a report the merge did not write"
grep -q '"two"' "$work/kept/last.json" || fail "a night without a report replaced the baseline"
echo "PASS: first night kept, second diffed (exit 1) and kept, a failed merge left the baseline"
