#!/usr/bin/env python3
"""`hetrain report` on two runs trained here and now (an equal and an adaptive split, `hetrain run -n 2` on
synthetic data, the second worker emulated 2x slower with --sample-cost-ms, an evaluation after every step):
the wall-clock curves and the time-to-target sentences, rendered in headless Chromium, agree with the runs'
own metrics files.

1. the wallclock-metric and wallclock-loss plots exist, are laid out with a size, and have drawn lines and
   target markers (the probe of render_test.py, after layout);
2. targets both runs reach, computed from their metrics (an accuracy the equal run reaches a quarter of the
   way through, at most the best both reach; the worse run's best training loss, smoothed as the report
   smooths it): each sentence says "R1 reached T ... in X1 s, R2 in X2 s (r x as long)", X the run's first
   point at or past T, the runs fastest first, r = X2 / X1. Which run is faster is not asserted: that is a
   measurement (bench/, docs/benchmarks.md), not a property of the report;
3. a loss target neither run reached (half the lowest step loss): the sentence says each "did not reach it
   in Y s", Y the end of its last step;
4. a screenshot of the page is not blank.
Chromium is required (scripts/setup.sh --test installs it).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render_test as rt  # noqa: E402  (the Chromium helpers)

PLOTS = ["wallclock-metric", "wallclock-loss"]
MIN_DRAWN = 4  # two runs' lines, the target line, a marker at least
POLICIES = ("equal", "adaptive")
# Short: 24 steps of B = 64, an evaluation after each; a small learning rate, so test accuracy climbs over
# about ten steps instead of one; the second worker takes 2 ms a sample, the first 1 ms (emulated device
# time), so each run takes a few seconds.
TRAIN = ["run", "-n", "2", "--model", "mlp", "--data", "synthetic", "--synthetic-train", "1536",
         "--synthetic-test", "300", "-b", "64", "--epochs", "1", "--seed", "5", "--threads", "1",
         "--eval-every", "1", "--lr", "1e-4", "--sample-cost-ms", "1", "--speeds", "1,0.5", "--timeout", "60",
         "--log-level", "warn"]
CURVES_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../src/hetrain/report/curves.h")
RUN_LIMIT_S = 240          # one training run; a hang fails the test
SECONDS_TOLERANCE = 0.051  # the page prints one decimal
RATIO_TOLERANCE = 0.006    # it prints the ratio with two
NUMBER = r"([\d.]+)"


def fail(msg):
    print(f"time_to_target_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def train(hetrain, work, policy):
    path = os.path.join(work, f"{policy}.json")
    if os.path.exists(path):
        os.remove(path)
    try:
        p = subprocess.run([hetrain, *TRAIN, "--policy", policy, "--metrics", path], capture_output=True,
                           text=True, timeout=RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        fail(f"hetrain run --policy {policy} still running after {RUN_LIMIT_S} s")
    if p.returncode != 0:
        fail(f"hetrain run --policy {policy} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    doc = json.load(open(path))
    if len(doc.get("evals", [])) < 2:
        fail(f"{path}: {len(doc.get('evals', []))} evaluations, expected one every 4 steps")
    return path, doc


def first_reach(doc, target):
    """The seconds of the first evaluation at or above `target` (the report's rule), or None."""
    return next((e["seconds"] for e in doc["evals"] if e["test_accuracy"] >= target), None)


def loss_window():
    """The report's smoothing of the training loss (steps averaged), from its header."""
    m = re.search(r"kLossWindowSteps = (\d+);", open(CURVES_H).read())
    if not m:
        fail(f"no kLossWindowSteps in {CURVES_H}")
    return int(m.group(1))


def smoothed_loss(doc, window):
    """(seconds, loss) per step, the loss averaged over the last `window` steps, as curves.cc does."""
    loss, end = doc["steps"]["loss"], doc["steps"]["end_seconds"]
    return [(end[i], sum(loss[max(0, i + 1 - window):i + 1]) / min(i + 1, window)) for i in range(len(loss))]


def loss_reach(curve, target):
    return next((t for t, v in curve if v <= target), None)


def paragraph(dom, plot):
    m = re.search(rf'<p class="meta ttt" id="{plot}-target">(.*?)</p>', dom, re.S)
    if not m:
        fail(f"no time-to-target sentence under {plot}")
    return m.group(1)


def check_reached(text, target, runs, what):
    """`runs`: {label: seconds}; the sentence lists them fastest first with their seconds and ratios."""
    order = sorted(runs, key=lambda r: runs[r])
    first = order[0]
    head = re.match(rf"{re.escape(first)} reached ([\d.e+-]+) {what} in {NUMBER} s", text)
    if not head:
        fail(f"the sentence {text!r} does not begin with the fastest run, {first}, reaching the target")
    if abs(float(head.group(1)) - target) > 5e-4 * target:  # printed with 4 significant digits
        fail(f"the sentence names target {head.group(1)}, the test set {target}")
    if abs(float(head.group(2)) - runs[first]) > SECONDS_TOLERANCE:
        fail(f"the sentence says {first} took {head.group(2)} s, its metrics {runs[first]:.3f} s")
    for r in order[1:]:
        m = re.search(rf"{re.escape(r)} in {NUMBER} s \({NUMBER}x as long\)", text)
        if not m:
            fail(f"the sentence {text!r} has no '{r} in X s (r x as long)'")
        want_ratio = runs[r] / runs[first]
        if abs(float(m.group(1)) - runs[r]) > SECONDS_TOLERANCE or abs(float(m.group(2)) - want_ratio) > \
                RATIO_TOLERANCE:
            fail(f"the sentence says {m.group(0)!r}; the metrics say {runs[r]:.3f} s, {want_ratio:.3f}x")


def check_not_reached(text, ends):
    for label, end in ends.items():
        m = re.search(rf"{re.escape(label)} did not reach it in {NUMBER} s", text)
        if not m:
            fail(f"the loss sentence {text!r} has no '{label} did not reach it in Y s'")
        if abs(float(m.group(1)) - end) > SECONDS_TOLERANCE:
            fail(f"the loss sentence says {label} ran {m.group(1)} s, its last step ended at {end:.3f} s")


def render(binary, page, work):
    probe = os.path.join(work, "probe.html")
    open(probe, "w", encoding="utf-8").write(open(page, encoding="utf-8").read().replace(
        "</body>", rt.PROBE + "\n</body>"))
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
    return dom, parser


def report(hetrain, work, paths, name, flags):
    page = os.path.join(work, name)
    p = subprocess.run([hetrain, "report", *paths, *flags, "-o", page], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"hetrain report exited {p.returncode}: {p.stderr.strip()}")
    return page


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    binary = rt.chromium_binary()
    os.makedirs(a.work, exist_ok=True)
    runs = {p: train(a.hetrain, a.work, p) for p in POLICIES}
    paths = [path for path, _ in runs.values()]
    docs = {p: doc for p, (_, doc) in runs.items()}
    best = min(max(e["test_accuracy"] for e in doc["evals"]) for doc in docs.values())
    evals = docs["equal"]["evals"]
    target = min(best, evals[len(evals) // 4]["test_accuracy"])
    window = loss_window()
    curves = {p: smoothed_loss(doc, window) for p, doc in docs.items()}
    loss_target = max(min(v for _, v in c) for c in curves.values())
    page = report(a.hetrain, a.work, paths, "report.html",
                  ["--target-accuracy", repr(target), "--target-loss", repr(loss_target)])
    dom, parser = render(binary, page, a.work)
    metric_text, loss_text = paragraph(dom, "wallclock-metric"), paragraph(dom, "wallclock-loss")
    check_reached(metric_text, target, {p: first_reach(doc, target) for p, doc in docs.items()}, "test accuracy")
    check_reached(loss_text, loss_target, {p: loss_reach(c, loss_target) for p, c in curves.items()},
                  "training loss")
    never = min(min(doc["steps"]["loss"]) for doc in docs.values()) / 2
    unreached = report(a.hetrain, a.work, paths, "unreached.html", ["--target-loss", repr(never)])
    never_text = paragraph(open(unreached, encoding="utf-8").read(), "wallclock-loss")
    check_not_reached(never_text, {p: doc["steps"]["end_seconds"][-1] for p, doc in docs.items()})
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
    print(f"time_to_target_test: ok: {metric_text!r}; {loss_text!r}; {never_text!r}; {drawn}; "
          f"screenshot {shot} ({ink:.3f} drawn)")


if __name__ == "__main__":
    main()
