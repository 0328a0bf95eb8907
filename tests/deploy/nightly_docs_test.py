#!/usr/bin/env python3
"""Issue 23, item 3: the GitHub Actions and Kubernetes examples in docs/nightly.md are checked,
not untested text. Every ```yaml block must parse (PyYAML); every `powercut <command> ...` and
`tools/nightly/slurm.sh ...` line in the YAML's `run:`/`args:` strings and in the ```sh blocks
must use only options the real program accepts (its --help), so a renamed flag fails CI; the
workflows must install the package (tools/run.sh package), not build targets by hand.

    nightly_docs_test.py SOURCE_DIR POWERCUT_BIN
"""
import re
import subprocess
import sys

import yaml

src, powercut = sys.argv[1], sys.argv[2]
text = open(f"{src}/docs/nightly.md").read()
failures = []


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


help_cache = {}


def options_of(argv):
    key = tuple(argv)
    if key not in help_cache:
        out = subprocess.run(argv + ["--help"], capture_output=True, text=True)
        help_cache[key] = set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout + out.stderr))
    return help_cache[key]


def check_line(line, where):
    # Shell continuation lines were joined by the caller; one command per line.
    for m in re.finditer(r"\bpowercut (matrix|merge|run|repro|fstest run|check|diff)\b([^;&|\n]*)", line):
        sub = m.group(1).split()
        allowed = options_of([powercut] + sub)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", m.group(2)):
            if flag not in allowed:
                failures.append(f"{where}: powercut {' '.join(sub)} has no option {flag}: {line.strip()}")
    for m in re.finditer(r"tools/nightly/slurm\.sh\b([^;&|\n]*)", line):
        script_opts = set(re.findall(r"(--[a-z][a-z0-9-]*)\)", open(f"{src}/tools/nightly/slurm.sh").read()))
        head = re.sub(r"=\S*", "", m.group(1).split(" -- ")[0])  # --sbatch-option=--time=...
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", head):
            if flag not in script_opts:
                failures.append(f"{where}: slurm.sh has no option {flag}: {line.strip()}")
        if " -- " in m.group(1):
            check_line("powercut " + m.group(1).split(" -- ", 1)[1], where)


def joined(block):
    return re.sub(r"\\\n\s*", " ", block)


def fenced_blocks(markdown):
    """(language, text) of every fenced block, fences paired in order."""
    blocks, lang, lines = [], None, []
    for line in markdown.splitlines():
        if line.startswith("```"):
            if lang is None:
                lang, lines = line[3:].strip(), []
            else:
                blocks.append((lang, "\n".join(lines) + "\n"))
                lang = None
        elif lang is not None:
            lines.append(line)
    return blocks


blocks = fenced_blocks(text)
yaml_blocks = [b for lang, b in blocks if lang == "yaml"]
if len(yaml_blocks) < 2:
    failures.append(f"expected the GitHub Actions and Kubernetes YAML blocks, found {len(yaml_blocks)}")
for i, block in enumerate(yaml_blocks):
    try:
        docs = [d for d in yaml.safe_load_all(block) if d is not None]
    except yaml.YAMLError as e:
        failures.append(f"yaml block {i + 1} does not parse: {e}")
        continue
    for doc in docs:
        for s in strings(doc):
            for line in joined(s).splitlines():
                check_line(line, f"yaml block {i + 1}")
    if "cmake --build" in block:
        failures.append(f"yaml block {i + 1} builds targets by hand; install the package instead")
workflow = yaml.safe_load(yaml_blocks[0]) if yaml_blocks else {}
steps = [s for job in workflow.get("jobs", {}).values() for s in job.get("steps", [])]
if not any("tools/run.sh package" in s.get("run", "") for s in steps):
    failures.append("the GitHub Actions workflow does not build the package (tools/run.sh package)")
for block in [b for lang, b in blocks if lang in ("", "sh")]:
    for line in joined(block).splitlines():
        check_line(line, "shell example")

checked = len(help_cache)
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"docs/nightly.md: {len(yaml_blocks)} YAML blocks parse; every option exists ({checked} commands' --help)")
