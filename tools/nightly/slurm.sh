#!/usr/bin/env bash
# A nightly crash matrix on Slurm (docs/nightly.md): the cells as a job array, one shard per
# task (--array=1-N, --shard $SLURM_ARRAY_TASK_ID/N), then `powercut merge` as a job that starts
# when every task has ended, however it ended (--dependency=afterany:<array>): a failed or
# cancelled shard is reported missing by the merge, and the merge's exit status says so.
#
#   tools/nightly/slurm.sh --shards N --out DIR [--baseline FILE] [--wait] [--sbatch-option OPT]...
#                          -- COMMAND...
#
# COMMAND is what each shard runs, passed through as given: `matrix --preset headline`,
# `matrix --workloads xlog --cache on`, `fstest run --fs ext4 ...`. Each task writes
# DIR/shard-K.{json,xml,html,log}; the merge writes DIR/matrix.{json,xml,html} and DIR/merge.log.
# --baseline FILE: last night's merged report. After the merge, `powercut diff FILE
# DIR/matrix.json` writes DIR/diff.{txt,md,html,json} and puts its section into DIR/matrix.html;
# then tonight's report replaces FILE (kept for tomorrow). The first night, with no FILE yet,
# only keeps it. The merge job's status is the worse of the merge's and the diff's.
# --wait: block until the merge has ended and exit with its status (0 every cell as expected and
# no regression, 1 some cell not as expected or a regression since the baseline, 2 a shard
# missing, a cell that could not run or a baseline that is not a report). Without --wait the
# script exits 0 once both jobs are submitted and prints their ids.
# Usage errors and a missing Slurm or powercut exit 2 before anything is submitted.
set -euo pipefail

usage() {
  echo "usage: tools/nightly/slurm.sh --shards N --out DIR [--baseline FILE] [--wait] [--sbatch-option OPT]... -- matrix|fstest ARGS..." >&2
  exit 2
}

shards="" out="" baseline="" wait=0 sbatch_options=()
while (($#)); do
  case "$1" in
    --shards) shards=${2:-}; shift 2 || usage ;;
    --out) out=${2:-}; shift 2 || usage ;;
    --baseline) baseline=${2:-}; shift 2 || usage ;;
    --wait) wait=1; shift ;;
    --sbatch-option) sbatch_options+=("${2:-}"); shift 2 || usage ;;
    # The --name=value spelling too (--sbatch-option=--time=1:00:00), as the docs write it.
    --shards=*) shards=${1#*=}; shift ;;
    --out=*) out=${1#*=}; shift ;;
    --baseline=*) baseline=${1#*=}; shift ;;
    --sbatch-option=*) sbatch_options+=("${1#*=}"); shift ;;
    --) shift; break ;;
    *) echo "slurm.sh: unknown option $1" >&2; usage ;;
  esac
done
command=("$@")
if [[ ! $shards =~ ^[0-9]+$ ]] || ((shards < 1)); then
  echo "slurm.sh: --shards must be a whole number of at least 1 (got '${shards}')" >&2
  exit 2
fi
[[ -n $out ]] || { echo "slurm.sh: --out DIR is missing: where the shards' reports go" >&2; exit 2; }
((${#command[@]})) || { echo "slurm.sh: no command after --: e.g. -- matrix --preset headline" >&2; exit 2; }
case "${command[0]}" in
  matrix) ;;
  fstest) [[ ${command[1]:-} == run ]] || { echo "slurm.sh: fstest: only 'fstest run' shards" >&2; exit 2; } ;;
  *) echo "slurm.sh: the command must be 'matrix ...' or 'fstest run ...' (got '${command[0]}')" >&2; exit 2 ;;
esac
for tool in sbatch squeue; do
  if ! command -v "$tool" >/dev/null; then
    echo "slurm.sh: $tool is not on PATH: run this on a Slurm submit host (Debian: apt-get install slurm-client)" >&2
    exit 2
  fi
done
powercut=${POWERCUT:-$(command -v powercut || true)}
if [[ -z $powercut || ! -x $powercut ]]; then
  echo "slurm.sh: powercut is not on PATH (install the package, docs/install.md, or set POWERCUT=PATH)" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -n $baseline ]]; then
  mkdir -p "$(dirname "$baseline")"
  baseline=$(cd "$(dirname "$baseline")" && pwd)/$(basename "$baseline")
fi

quoted=$(printf '%q ' "$powercut" "${command[@]}")
# Each task: its shard; exit 1 (cells not as expected) still counts as a finished shard.
shard_script="k=\$SLURM_ARRAY_TASK_ID; $quoted--shard \$k/$shards --quiet \
--json $(printf %q "$out")/shard-\$k.json --junit $(printf %q "$out")/shard-\$k.xml \
--html $(printf %q "$out")/shard-\$k.html; rc=\$?; [ \$rc -le 1 ] || exit \$rc"
array=$(sbatch --parsable "${sbatch_options[@]}" --job-name=powercut-shard --array="1-$shards" \
  --output="$out/shard-%a.log" --wrap="$shard_script")
array=${array%%;*}
merge_script="$(printf %q "$powercut") merge $(printf %q "$out")/shard-*.json \
--junit $(printf %q "$out")/matrix.xml --html $(printf %q "$out")/matrix.html --table \
> $(printf %q "$out")/matrix.json"
if [[ -n $baseline ]]; then
  # What changed since last night, when the merge wrote a report; then it is the new baseline.
  p=$(printf %q "$powercut") b=$(printf %q "$baseline") o=$(printf %q "$out")
  merge_script="$merge_script; rc=\$?; if [ -s $o/matrix.json ]; then if [ -f $b ]; then \
$p diff $b $o/matrix.json --json $o/diff.json --markdown $o/diff.md --html $o/diff.html \
--into-html $o/matrix.html > $o/diff.txt 2>&1; d=\$?; [ \$d -le \$rc ] || rc=\$d; \
else echo 'powercut diff: no baseline yet' > $o/diff.txt; fi; \
cp $o/matrix.json $b.tmp && mv $b.tmp $b; fi; exit \$rc"
fi
merge_args=(--parsable "${sbatch_options[@]}" --job-name=powercut-merge
  --dependency="afterany:$array" --output="$out/merge.log" --wrap="$merge_script")
((wait)) && merge_args=(--wait "${merge_args[@]}")
echo "slurm.sh: array job $array: $shards shard(s) of: ${command[*]}"
echo "slurm.sh: reports: $out/matrix.json $out/matrix.xml $out/matrix.html (shards: $out/shard-K.*)"
[[ -z $baseline ]] || echo "slurm.sh: since $baseline: $out/diff.txt $out/diff.md $out/diff.html"
set +e
merge=$(sbatch "${merge_args[@]}")
rc=$?
set -e
echo "slurm.sh: merge job ${merge%%;*} (after every task of $array)"
if ((wait)); then
  echo "slurm.sh: merge exit status $rc (0 all as expected, 1 unexpected cells or a regression, 2 missing shard, could not run or a bad baseline)"
  exit "$rc"
fi
