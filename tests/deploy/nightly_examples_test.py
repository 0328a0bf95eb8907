#!/usr/bin/env python3
"""Issue 34, item 3: docs/nightly.md's GitHub Actions merge job, its Kubernetes merge Job and
tools/nightly/slurm.sh --baseline really keep last night's report and run `powercut diff` after
the merge. Each example is run as written, night after night, with the real `powercut merge` and
`powercut diff` on shard reports made from tests/diff/data/matrix.json:

  1. the first night keeps its report and diffs nothing;
  2. the same cells again: the diff runs, "no regression", the job passes;
  3. a cell turned unexpected: the diff names the cell and model, the job fails (exit 1), and
     tonight's report is kept for tomorrow;
  4. a shard missing, so no merged report: no diff, last night's report stays the baseline;
  5. a cell that could not run (the merge exits 2 but writes its report): the diff still runs and
     names the cell.

GitHub's `uses:` actions are played by small stand-ins (a cache entry is a folder that outlives
the night); an action the stand-ins do not know fails the test, so a changed example is looked at
again. Slurm's sbatch runs each job's script at once (the real Slurm is slurm_test.sh).

    nightly_examples_test.py SOURCE_DIR POWERCUT_BIN DIFF_TEST_DATA
"""
import copy
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

src, powercut, data = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
failures = []
base_report = json.loads(pathlib.Path(f"{data}/matrix.json").read_text())
CELL, MODEL = "xlog/fdatasync/ext4", "on"  # the cell the third night breaks
BROKEN = "xlog/none/ext4"                  # the cell that cannot run on the fifth


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def night_report(night):
    """The whole plan's report of one night (both cells), before sharding."""
    r = copy.deepcopy(base_report)
    if night == 3:
        cell = r["cells"][0]
        on = cell["results"][1]
        on.update(violations=2, passed=False, as_expected=False, lost_acks_max=4,
                  lost_acks_max_exact=False, stopped="first_violation")
        cell.update(status="fail", verdict="unexpected",
                    unexpected="cache on: expected survives, got 2 violating states")
    if night == 5:
        cell = r["cells"][1]
        cell.update(status="error", error_kind="vm", error="cannot start the guest: qemu died",
                    results=[], verdict="error")
    return r


def write_shards(night, folder, name="shard-{k}.json"):
    """Shard K/2 holds cell K-1; the fourth night lost shard 2."""
    r = night_report(night)
    os.makedirs(folder, exist_ok=True)
    for k in (1, 2):
        if night == 4 and k == 2:
            continue
        shard = dict(r, shard=f"{k}/2", cells=[c for c in r["cells"] if c["index"] == k - 1])
        pathlib.Path(folder, name.format(k=k)).write_text(json.dumps(shard))


def bin_dir(root):
    """A PATH folder whose `powercut` is the built one (the examples install the package)."""
    d = pathlib.Path(root, "bin")
    d.mkdir(exist_ok=True)
    link = d / "powercut"
    if not link.exists():
        link.symlink_to(powercut)
    return str(d)


def expect_common(where, night, text, kept_before, kept_after, status, pass_fail_only=False):
    """What every example must show for a night: `text` is what the diff said (job summary,
    diff.txt), `kept_*` the baseline's text before and after the night, `status` the job's exit
    status (with pass_fail_only, a GitHub job's: 0 passed, 1 failed)."""
    want = {1: 0, 2: 0, 3: 1, 4: 2, 5: 2}[night]
    if pass_fail_only:
        want = min(want, 1)
    check(status == want, f"{where} night {night}: status {status}, not {want}")
    if night == 1:
        check(kept_after is not None and json.loads(kept_after)["shard"] == "merged",
              f"{where} night 1: tonight's report was not kept")
        check(text is None or "no regression" not in text and "regression:" not in text,
              f"{where} night 1 diffed without a baseline: {text}")
    elif night == 2:
        check("no regression" in (text or ""), f"{where} night 2: no 'no regression': {text}")
    elif night == 3:
        check(f"1 regression: {CELL} cache {MODEL}" in (text or ""),
              f"{where} night 3: the diff does not name {CELL} cache {MODEL}: {text}")
        check(kept_after is not None and json.loads(kept_after)["cells"][0]["verdict"] ==
              "unexpected", f"{where} night 3: tonight's report did not replace last night's")
    elif night == 4:
        check(kept_after == kept_before,
              f"{where} night 4: a night without a report replaced the baseline")
    elif night == 5:
        check(f"1 regression: {BROKEN}" in (text or ""),
              f"{where} night 5: the diff does not name the cell that could not run: {text}")


def read(path):
    p = pathlib.Path(path)
    return p.read_text() if p.is_file() else None


# ---- GitHub Actions: the merge job, step by step ----
def github_actions(workflow, root):
    start = len(failures)
    job = workflow["jobs"]["merge"]
    steps = job["steps"]
    names = [s.get("name", s.get("uses", "")) for s in steps]
    merge_at = next((i for i, s in enumerate(steps) if "powercut merge" in s.get("run", "")), None)
    diff_at = next((i for i, s in enumerate(steps) if "powercut diff" in s.get("run", "")), None)
    if not check(merge_at is not None and diff_at is not None and merge_at < diff_at,
                 f"GitHub Actions: the merge job must run powercut diff after powercut merge: {names}"):
        return
    check(steps[diff_at].get("if") == "always()",
          "GitHub Actions: the diff step must run however the merge ended (if: always())")
    cache = pathlib.Path(root, "cache")  # one folder per saved key
    cache.mkdir()
    path_dirs = bin_dir(root) + os.pathsep + os.environ["PATH"]
    for night in range(1, 6):
        work = pathlib.Path(root, f"gh-night{night}")
        work.mkdir()
        summary = work / "summary.md"
        run_id = str(1000 + night)
        failed = False
        env = dict(os.environ, PATH=path_dirs, GITHUB_STEP_SUMMARY=str(summary),
                   GITHUB_OUTPUT=str(work / "output"))
        kept_before = newest_cache_file(cache, "crash-matrix-", "matrix.json")
        for step in steps:
            cond = step.get("if")
            if cond not in (None, "always()"):
                check(False, f"GitHub Actions: a condition the test does not know: {cond}")
                return
            if failed and cond != "always()":
                continue
            ok = True
            if "uses" in step:
                ok = play_action(step, work, cache, night, run_id)
                if ok is None:
                    return
            elif "apt-get" in step["run"]:
                continue  # the package's installation: powercut is on PATH
            else:
                script = step["run"].replace("${{ github.run_id }}", run_id)
                if "${{" in script:
                    check(False, f"GitHub Actions: an expression the test does not know: {script}")
                    return
                r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                                   cwd=work, env=env, capture_output=True, text=True)
                (work / "steps.log").open("a").write(
                    f"== {step.get('name')}: exit {r.returncode}\n{r.stdout}{r.stderr}")
                ok = r.returncode == 0
            failed = failed or not ok
        kept_after = newest_cache_file(cache, "crash-matrix-", "matrix.json")
        expect_common("GitHub Actions", night, read(summary), kept_before, kept_after,
                      1 if failed else 0, pass_fail_only=True)
        if night == 3 or night == 2:
            html = read(work / "matrix.html") or ""
            check('<section id="powercut-diff">' in html,
                  f"GitHub Actions night {night}: matrix.html does not show the diff")
            check(read(work / "diff.json") is not None,
                  f"GitHub Actions night {night}: no diff.json in the artifact")
        if len(failures) > start:
            print(read(work / "steps.log"))
            return


def newest_cache_file(cache, prefix, name):
    entries = sorted(p for p in cache.iterdir() if p.name.startswith(prefix))
    for entry in reversed(entries):
        text = read(entry / name)
        if text is not None:
            return text
    return None


def play_action(step, work, cache, night, run_id):
    """The actions the merge job uses, played on folders; None: one the test does not know."""
    action = step["uses"].split("@")[0]
    w = {k: str(v).replace("${{ github.run_id }}", run_id) for k, v in step.get("with", {}).items()}
    if action == "actions/checkout":
        return True
    if action == "actions/download-artifact":
        write_shards(night, work / w["path"])
        return True
    if action == "actions/cache/restore":
        if (cache / w["key"]).is_dir():
            src_dir = cache / w["key"]
        else:
            # The newest entry of the prefix: the run ids grow night by night.
            entries = sorted(p for p in cache.iterdir() if p.name.startswith(w["restore-keys"]))
            src_dir = entries[-1] if entries else None
        if src_dir is not None:
            shutil.copytree(src_dir, work / w["path"])
        return True
    if action == "actions/cache/save":
        if (work / w["path"]).is_dir():
            shutil.copytree(work / w["path"], cache / w["key"])
        return True
    if action in ("actions/upload-artifact", "mikepenz/action-junit-report"):
        return True
    check(False, f"GitHub Actions: an action the test does not play: {step['uses']}")
    return None


# ---- Kubernetes: the merge Job's script, /results a folder of its own ----
def kubernetes(docs, root):
    start = len(failures)
    merge_job = next((d for d in docs if d.get("kind") == "Job"
                      and "merge" in d["metadata"]["name"]), None)
    if not check(merge_job is not None, "Kubernetes: no merge Job"):
        return
    script = "\n".join(merge_job["spec"]["template"]["spec"]["containers"][0]["args"])
    check(script.find("powercut merge") < script.find("powercut diff") and "powercut diff" in script,
          "Kubernetes: the merge Job must run powercut diff after powercut merge")
    results = pathlib.Path(root, "results")
    env = dict(os.environ, PATH=bin_dir(root) + os.pathsep + os.environ["PATH"])
    for night in range(1, 6):
        for f in results.glob("*") if results.exists() else []:
            if f.name != "last.json":
                f.unlink()
        write_shards(night, results)
        kept_before = read(results / "last.json")
        r = subprocess.run(["sh", "-c", script.replace("/results", str(results))], env=env,
                           capture_output=True, text=True)
        text = read(results / "diff.txt")
        if night == 4:
            text = None
        expect_common("Kubernetes", night, text, kept_before, read(results / "last.json"),
                      r.returncode)
        if night in (2, 3):
            check('<section id="powercut-diff">' in (read(results / "matrix.html") or ""),
                  f"Kubernetes night {night}: matrix.html does not show the diff")
        if len(failures) > start:
            print(r.stdout, r.stderr)
            return


# ---- Slurm: tools/nightly/slurm.sh --baseline with an sbatch that runs each script at once ----
FAKE_SBATCH = r"""#!/usr/bin/env bash
wrap="" array="" out=""
for a in "$@"; do
  case "$a" in --wrap=*) wrap=${a#--wrap=} ;; --array=*) array=${a#--array=} ;; --output=*) out=${a#--output=} ;; esac
done
if [[ -n $array ]]; then
  for k in $(seq "${array#1-}"); do SLURM_ARRAY_TASK_ID=$k sh -c "$wrap" > "${out//%a/$k}" 2>&1; done
  echo 100
  exit 0
fi
sh -c "$wrap" > "$out" 2>&1
rc=$?
echo 101
exit $rc
"""
# The shards' `powercut matrix --shard K/N --json F`: tonight's shard K (none for a lost one,
# which exits 2 like a shard that could not run); merge and diff are the real powercut's.
FAKE_POWERCUT = r"""#!/usr/bin/env bash
if [[ $1 == matrix ]]; then
  k="" json=""
  while (($#)); do
    case "$1" in --shard) k=${2%%/*} ;; --json) json=$2 ;; esac
    shift
  done
  [[ -f $NIGHT_SHARDS/shard-$k.json ]] || exit 2
  cp "$NIGHT_SHARDS/shard-$k.json" "$json"
  exit 0
fi
exec "$REAL_POWERCUT" "$@"
"""


def slurm(root):
    start = len(failures)
    bindir = pathlib.Path(root, "slurm-bin")
    bindir.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("squeue", "#!/bin/sh\nexit 0\n"),
                       ("powercut", FAKE_POWERCUT)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    kept = pathlib.Path(root, "kept", "last.json")
    for night in range(1, 6):
        shards = pathlib.Path(root, f"slurm-shards{night}")
        write_shards(night, shards)
        out = pathlib.Path(root, f"slurm-night{night}")
        env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ["PATH"],
                   POWERCUT=str(bindir / "powercut"), REAL_POWERCUT=powercut,
                   NIGHT_SHARDS=str(shards))
        kept_before = read(kept)
        r = subprocess.run(["bash", f"{src}/tools/nightly/slurm.sh", "--shards", "2", "--out",
                            str(out), "--baseline", str(kept), "--wait", "--", "matrix",
                            "--preset", "headline"], env=env, capture_output=True, text=True)
        text = read(out / "diff.txt")
        if night == 4:
            check(text is None, f"Slurm night 4: diffed a report the merge did not write: {text}")
        expect_common("Slurm", night, text, kept_before, read(kept), r.returncode)
        if night in (2, 3):
            for f in ("diff.md", "diff.json", "diff.html"):
                check((out / f).is_file(), f"Slurm night {night}: no {f}")
            check('<section id="powercut-diff">' in (read(out / "matrix.html") or ""),
                  f"Slurm night {night}: matrix.html does not show the diff")
        if len(failures) > start:
            print(r.stdout, r.stderr, read(out / "merge.log"))
            return


text = pathlib.Path(f"{src}/docs/nightly.md").read_text()
blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
with tempfile.TemporaryDirectory(prefix="powercut-nightly-examples-") as root:
    gh_root, k8s_root, slurm_root = (pathlib.Path(root, n) for n in ("gh", "k8s", "slurm"))
    for d in (gh_root, k8s_root, slurm_root):
        d.mkdir()
    github_actions(yaml.safe_load(blocks[0]), gh_root)
    kubernetes([d for d in yaml.safe_load_all(blocks[1]) if d], k8s_root)
    slurm(slurm_root)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("docs/nightly.md's GitHub Actions and Kubernetes merge jobs and tools/nightly/slurm.sh "
      "--baseline: 5 nights each, last night's report kept, powercut diff run after the merge")
