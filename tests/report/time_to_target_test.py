#!/usr/bin/env python3
"""`hetrain report` on an equal and an adaptive run of the demo (tests/report/data/demo-*.json: 4 workers, cnn,
B = 256, rank 3 emulated 4x slower, 150 steps, --eval-every 25) shows the wall-clock curves and the time-to-target line,
rendered in headless Chromium:

1. the report with --target-accuracy: the wallclock-metric and wallclock-loss plots exist, are laid out with a
   size, and have drawn lines and target markers (the probe of render_test.py, after layout);
2. the rendered page says "adaptive reached T test accuracy in X s, equal in Y s" with X < Y, and the numbers
   agree with the metrics files (the first evaluation at or above T);
3. a screenshot of the page is not blank.
Chromium is required (scripts/setup.sh --test installs it).
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render_test as rt  # noqa: E402  (the Chromium helpers)

PLOTS = ["wallclock-metric", "wallclock-loss"]
MIN_DRAWN = 4  # two runs' lines, the target line, a marker at least
TARGET = 0.82  # test accuracy both demo runs reach (Fashion-MNIST, after 75 steps)
# Runs are named by their files' names (demo-adaptive, demo-equal).
SENTENCE = re.compile(r"demo-adaptive reached ([\d.]+) test accuracy in ([\d.]+) s, demo-equal in ([\d.]+) s")
SECONDS_TOLERANCE = 0.05  # the page prints one decimal


def fail(msg):
    print(f"time_to_target_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def first_reach(path, target):
    for e in json.load(open(path))["evals"]:
        if e["test_accuracy"] >= target:
            return e["seconds"]
    fail(f"{path} never reaches {target}: pick a lower TARGET")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--fixtures", required=True, help="folder with demo-equal.json and demo-adaptive.json")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    binary = rt.chromium_binary()
    os.makedirs(a.work, exist_ok=True)
    runs = [os.path.join(a.fixtures, f"demo-{p}.json") for p in ("equal", "adaptive")]
    page = os.path.join(a.work, "report.html")
    p = rt.subprocess.run([a.hetrain, "report", *runs, "--target-accuracy", str(TARGET), "-o", page],
                          capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"hetrain report exited {p.returncode}: {p.stderr.strip()}")
    text = open(page, encoding="utf-8").read()
    probe = os.path.join(a.work, "probe.html")
    open(probe, "w", encoding="utf-8").write(text.replace("</body>", rt.PROBE + "\n</body>"))
    with tempfile.TemporaryDirectory() as profile:
        dom = rt.chromium(binary, profile, ["--dump-dom", "file://" + os.path.abspath(probe)])
    parser = rt.PlotParser()
    parser.feed(dom)
    if not parser.probe_done:
        fail("the probe script did not run in Chromium")
    for pid in PLOTS:
        attrs = parser.plots.get(pid)
        if attrs is None:
            fail(f"plot {pid} is missing")
        if int(attrs.get("data-drawn", 0)) < MIN_DRAWN or int(attrs.get("data-width", 0)) <= 0:
            fail(f"plot {pid}: {attrs.get('data-drawn')} drawn elements, {attrs.get('data-width')} px wide")
    m = SENTENCE.search(dom)
    if not m:
        fail("no 'demo-adaptive reached T test accuracy in X s, demo-equal in Y s' in the rendered page")
    target, fast, slow = float(m.group(1)), float(m.group(2)), float(m.group(3))
    want_fast, want_slow = first_reach(runs[1], TARGET), first_reach(runs[0], TARGET)
    if target != TARGET or abs(fast - want_fast) > SECONDS_TOLERANCE or abs(slow - want_slow) > SECONDS_TOLERANCE:
        fail(f"the page says {m.group(0)!r}; the metrics say {want_fast:.2f} s and {want_slow:.2f} s")
    if not fast < slow:
        fail(f"adaptive took {fast} s, equal {slow} s: the demo's adaptive run should be faster")
    shot = os.path.join(a.work, "report.png")
    if os.path.exists(shot):
        os.remove(shot)
    with tempfile.TemporaryDirectory() as profile:
        rt.chromium(binary, profile, [f"--screenshot={shot}", f"--window-size={rt.WINDOW[0]},{rt.WINDOW[1]}",
                                      "file://" + os.path.abspath(page)])
    size, ink = rt.png_ink_fraction(shot)
    if ink < rt.MIN_INK_FRACTION:
        fail(f"screenshot is blank ({ink:.4f} of pixels drawn)")
    drawn = ", ".join(f"{pid}={parser.plots[pid]['data-drawn']}" for pid in PLOTS)
    print(f"time_to_target_test: ok: {m.group(0)}; {drawn}; screenshot {shot} ({ink:.3f} drawn)")


if __name__ == "__main__":
    main()
