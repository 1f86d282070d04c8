#!/usr/bin/env python3
"""Bring your own model: a module scripted and saved by Debian's python3-torch
(torch.jit.script(model).save(path)) trains with `hetrain run --model path.pt`
on 2 workers under the adaptive policy, to a test accuracy well above chance;
a file that is not TorchScript, or a model whose output does not fit the data,
is a one-line data error (exit code 3).

Needs python3-torch (scripts/setup.sh --test installs it); without it the test
fails and says so."""
import argparse
import json
import os
import subprocess
import sys

DATA_ERROR = 3
CHANCE = 0.1           # 10 classes
MIN_ACCURACY = 0.5     # well above chance; the built-in mlp reaches ~1.0 on this synthetic set

EXPORT = r"""
import sys, torch
torch.manual_seed(0)
classes = int(sys.argv[2])
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, classes))
torch.jit.script(model).save(sys.argv[1])
"""


def fail(msg):
    print(f"torchscript_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--torch-python", default="/usr/bin/python3",
                    help="a Python with Debian's python3-torch (the same libtorch as hetrain)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    probe = subprocess.run([a.torch_python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"{a.torch_python} cannot import torch: install Debian's python3-torch "
             f"(scripts/setup.sh --test does)")
    model, wrong = os.path.join(a.work, "mlp.pt"), os.path.join(a.work, "three_classes.pt")
    for path, classes in ((model, 10), (wrong, 3)):
        p = subprocess.run([a.torch_python, "-c", EXPORT, path, str(classes)], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"export with torch {probe.stdout.strip()} failed: {p.stderr.strip()[-1000:]}")

    metrics = os.path.join(a.work, "m.json")
    base = [a.hetrain, "run", "-n", "2", "--data", "synthetic", "--synthetic-train", "2000", "--synthetic-test",
            "500", "--threads", "1", "-b", "64", "--epochs", "2", "--quiet"]
    p = subprocess.run(base + ["--model", model, "--policy", "adaptive", "--speeds", "1,0.5", "--metrics", metrics],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"training the TorchScript model: exit {p.returncode}: {p.stderr.strip()}")
    d = json.load(open(metrics))
    acc = d["epochs"][-1]["test_accuracy"]
    if acc <= MIN_ACCURACY:
        fail(f"test accuracy {acc:.3f} after 2 epochs (chance {CHANCE}, expected > {MIN_ACCURACY})")
    if d["model"] != model:
        fail(f"metrics name the model {d['model']!r}")

    garbage = os.path.join(a.work, "garbage.pt")
    open(garbage, "w").write("not a TorchScript archive\n")
    for path, text in ((garbage, "cannot load TorchScript model"), (wrong, "expected [2, 10] logits"),
                       (os.path.join(a.work, "missing.pt"), "no such file")):
        p = subprocess.run(base + ["--model", path], capture_output=True, text=True, timeout=300)
        lines = p.stderr.splitlines()
        if p.returncode != DATA_ERROR or len(lines) != 1 or text not in lines[0]:
            fail(f"--model {path}: exit {p.returncode} (want {DATA_ERROR}), stderr {p.stderr!r}")
    print(f"torchscript_test: ok: test accuracy {acc:.4f} (torch {probe.stdout.strip()}), 3 bad models rejected")


if __name__ == "__main__":
    main()
