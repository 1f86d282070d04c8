#!/usr/bin/env python3
"""Layers point only down (docs/architecture.md).

Checks every `#include "hetrain/<folder>/..."` under src/hetrain against the
table below, and every hetrain_* target that CMakeLists.txt links against the
same table; and that no file of a folder in MAX_LINES is longer than its
limit. Prints one line per violation (file:line) and exits 1 on any.
"""
import argparse
import os
import re
import sys

# folder -> the folders it may include (besides itself).
ALLOWED = {
    "common": set(),
    "comm": {"common"},
    "alloc": {"common"},
    "data": {"common"},
    "record": {"common"},
    "train": {"common", "comm", "alloc", "data", "record"},
    "sim": {"common", "comm", "alloc", "data", "record"},
    "report": {"common", "record"},
    "sched": {"common", "comm", "alloc", "data", "record", "sim"},
    "pool": {"common", "comm", "alloc", "data", "record", "sim", "sched"},
    "cli": {"common", "comm", "alloc", "data", "record", "train", "sim", "report", "sched", "pool"},
}
# CMake target -> its folder (comm_gloo is comm's Gloo backend, comm/gloo/).
TARGETS = {
    "hetrain_common": "common", "hetrain_comm": "comm", "hetrain_comm_gloo": "comm",
    "hetrain_alloc": "alloc", "hetrain_data": "data", "hetrain_record": "record",
    "hetrain_train": "train", "hetrain_sim": "sim", "hetrain_report": "report", "hetrain_sched": "sched", "hetrain_pool": "pool",
    "hetrain": "cli",
}
# folder -> the most lines one of its files may have: the allocation core is
# read whole by whoever changes the policy (issue 26: no alloc/ file over 400).
MAX_LINES = {"alloc": 400}
INCLUDE = re.compile(r'^\s*#\s*include\s*"hetrain/([a-z_]+)/')


def check_includes(src):
    problems, files = [], 0
    for folder in sorted(os.listdir(src)):
        if folder not in ALLOWED:
            problems.append(f"{src}/{folder}: a folder the layer table does not know (add it to docs/architecture.md and {__file__})")
            continue
        for dirpath, _, names in os.walk(os.path.join(src, folder)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                files += 1
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != folder and m.group(1) not in ALLOWED[folder]:
                            problems.append(f"{path}:{number}: {folder}/ includes {m.group(1)}/, a layer above or beside it")
    return problems, files


def check_cmake(path):
    text = open(path, encoding="utf-8").read()
    problems, links = [], 0
    for m in re.finditer(r"target_link_libraries\(\s*(\w+)([^)]*)\)", text):
        owner, args = m.group(1), m.group(2)
        if owner not in TARGETS:
            continue
        for dep in re.findall(r"\bhetrain_\w+", args):
            links += 1
            below = TARGETS.get(dep)
            if below is None:
                problems.append(f"{path}: {owner} links {dep}, a target the layer table does not know")
            elif below != TARGETS[owner] and below not in ALLOWED[TARGETS[owner]]:
                problems.append(f"{path}: {owner} links {dep}: {TARGETS[owner]}/ may not depend on {below}/")
    return problems, links


def check_lengths(src):
    problems = []
    for folder, limit in MAX_LINES.items():
        base = os.path.join(src, folder)
        for name in sorted(os.listdir(base)):
            path = os.path.join(base, name)
            if not os.path.isfile(path) or not name.endswith((".h", ".cc")):
                continue
            with open(path, encoding="utf-8") as f:
                lines = sum(1 for _ in f)
            if lines > limit:
                problems.append(f"{path}:{lines}: {lines} lines, over {folder}/'s {limit}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    problems, files = check_includes(os.path.join(args.root, "src", "hetrain"))
    cmake_problems, links = check_cmake(os.path.join(args.root, "CMakeLists.txt"))
    problems += cmake_problems
    problems += check_lengths(os.path.join(args.root, "src", "hetrain"))
    for p in problems:
        print(p)
    if files == 0 or links == 0:
        print(f"layers: read {files} source files and {links} target links: nothing to check")
        return 1
    print(f"layers: {files} files, {links} target links, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
