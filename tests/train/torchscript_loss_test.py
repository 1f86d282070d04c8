#!/usr/bin/env python3
"""A TorchScript model that brings its own loss: `loss(output, target)`, exported next to forward, is what
hetrain minimises instead of --loss, on .npy regression data written by NumPy (5 inputs per row, not 784).

1. The loss used is the model's: one step at a negligible learning rate on the whole training set as one global batch
   (3 workers, an uneven static split) must report the model's smooth-L1 (Huber) loss of its saved
   parameters, as Python computes it, and not the mean squared error, which --loss would default to on float
   targets; the test metric is the model's loss over the test set (test_loss), also checked against Python.
2. Same maths: 1 worker and 3 workers on an uneven split (--policy static --shares 5,17,42) train to the same
   final training and test loss, well below the untrained model's.
3. Bad input, one line and a non-zero exit: a loss returning per-sample values (not a scalar), a loss with the
   wrong signature, a loss that does not depend on the output (exit 3), and --loss given as well (exit 2).

Needs /usr/bin/python3 with Debian's python3-torch and python3-numpy (scripts/setup.sh --test)."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

USAGE, DATA = 2, 3
INPUTS = 5
TRAIN_ROWS, TEST_ROWS = 600, 200
OUTLIER_FRACTION = 0.1  # rows whose target is pushed far off: where Huber and MSE part ways
OUTLIER_SHIFT = 20.0
NOISE = 0.1
SAME_RELATIVE = 1e-4     # the reported loss vs Python's: float32 sums in another order
EQUAL_RELATIVE = 1e-4    # 1 worker vs 3 workers: float summation order differs per split
MSE_APART = 0.5          # MSE must differ from the Huber loss by more than this fraction of it
GAP_LEFT = 0.25          # training must close 3/4 of the gap between the untrained model and the true map
STILL_LR = 1e-9          # SGD steps this small leave the losses unchanged to float32 precision

MODELS = r"""
import sys, torch
import torch.nn.functional as F
torch.manual_seed(0)

class Linear(torch.nn.Module):
    # one linear layer; each model below differs only in its loss
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(int(sys.argv[2]), 1)
    def forward(self, x):
        return self.fc(x)

class Huber(Linear):
    @torch.jit.export
    def loss(self, output, target):
        # smooth-L1 (Huber): quadratic below 1, linear above; none of --loss's built-ins
        return F.smooth_l1_loss(output, target.reshape(output.shape), beta=1.0)

class PerSample(Linear):
    @torch.jit.export
    def loss(self, output, target):
        return (output - target.reshape(output.shape)).abs()

class OneArgument(Linear):
    @torch.jit.export
    def loss(self, output):
        return output.mean()

class TargetsOnly(Linear):
    @torch.jit.export
    def loss(self, output, target):
        return target.mean()

for cls in (Huber, PerSample, OneArgument, TargetsOnly):
    torch.jit.script(cls()).save(f"{sys.argv[1]}/{cls.__name__.lower()}.pt")
"""

# The saved Huber model's losses on the .npy sets, as hetrain must compute them.
REFERENCE = r"""
import json, sys, numpy as np, torch
import torch.nn.functional as F
m = torch.jit.load(sys.argv[1])
out = {}
for split in ("train", "test"):
    x = torch.from_numpy(np.load(f"{sys.argv[2]}/{split}_x.npy"))
    y = torch.from_numpy(np.load(f"{sys.argv[2]}/{split}_y.npy"))
    with torch.no_grad():
        o = m(x)
        out[split] = {"model": m.loss(o, y).item(), "mse": F.mse_loss(o, y.reshape(o.shape)).item()}
print(json.dumps(out))
"""


def fail(msg):
    print(f"torchscript_loss_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


TRUE_W = np.array([3.0, -2.0, 1.0, 0.5, 4.0], dtype=np.float32)


def huber(r):
    """smooth-L1 with beta 1, the exported model's loss, in NumPy."""
    a = np.abs(r.astype(np.float64))
    return float(np.where(a < 1.0, 0.5 * a * a, a - 0.5).mean())


def write_data(d):
    rng = np.random.default_rng(19)
    w = TRUE_W
    for split, n in (("train", TRAIN_ROWS), ("test", TEST_ROWS)):
        x = rng.standard_normal((n, INPUTS)).astype(np.float32)
        y = x @ w + NOISE * rng.standard_normal(n).astype(np.float32)
        far = rng.random(n) < OUTLIER_FRACTION
        y[far] += OUTLIER_SHIFT * rng.choice([-1.0, 1.0], size=int(far.sum())).astype(np.float32)
        np.save(os.path.join(d, f"{split}_x.npy"), x)
        np.save(os.path.join(d, f"{split}_y.npy"), y.astype(np.float32))


def run(a, name, flags, n=1):
    metrics = os.path.join(a.work, f"{name}.json")
    cmd = [a.hetrain, "run", "-n", str(n), "--threads", "1", "--quiet", "--metrics", metrics] + flags
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
    return json.load(open(metrics))


def close(x, y, rel):
    return abs(x - y) <= rel * abs(y)


def loss_is_the_models(a, data, model, ref):
    # B = the whole training set: the one step's loss is over every row, whatever order the epoch draws.
    # A learning rate too small to move the test loss (--lr 0 means the optimizer's default).
    d = run(a, "still", ["--data", data, "--model", model, "-b", str(TRAIN_ROWS), "--epochs", "1", "--optimizer",
                         "sgd", "--lr", str(STILL_LR), "--policy", "static", "--shares", "1,2,5"], n=3)
    if d["loss"] != "model" or d["metric"] != "loss":
        fail(f"metrics name loss {d['loss']!r} and metric {d['metric']!r} (want 'model', 'loss')")
    got, test = d["epochs"][0]["train_loss"], d["epochs"][0]["test_loss"]
    huber, mse = ref["train"]["model"], ref["train"]["mse"]
    if not close(got, huber, SAME_RELATIVE):
        fail(f"reported training loss {got!r}, the model's loss() gives {huber!r} (MSE would be {mse!r})")
    if close(got, mse, MSE_APART):
        fail(f"reported training loss {got!r} is close to the MSE {mse!r}: the data cannot tell the losses apart")
    if not close(test, ref["test"]["model"], SAME_RELATIVE):
        fail(f"test_loss {test!r}, the model's loss() on the test set gives {ref['test']['model']!r}")
    print(f"torchscript_loss_test: the model's loss is used: {got:.6f} (Python: Huber {huber:.6f}, "
          f"MSE {mse:.6f}); test_loss {test:.6f}")


def same_maths(a, data, model, ref):
    base = ["--data", data, "--model", model, "--optimizer", "sgd", "--lr", "0.2", "-b", "64", "--epochs", "6",
            "--seed", "3"]
    one = run(a, "one", base)
    three = run(a, "three", base + ["--policy", "static", "--shares", "5,17,42"], n=3)
    for key in ("train_loss", "test_loss"):
        x, y = one["epochs"][-1][key], three["epochs"][-1][key]
        if not close(y, x, EQUAL_RELATIVE):
            fail(f"final {key}: 1 worker {x!r}, 3 workers split 5/17/42 {y!r}")
    trained, untrained = one["epochs"][-1]["test_loss"], ref["test"]["model"]
    x, y = np.load(os.path.join(data, "test_x.npy")), np.load(os.path.join(data, "test_y.npy"))
    best = huber(y - x @ TRUE_W)  # the map that made the data (the outliers stay)
    if not trained < best + GAP_LEFT * (untrained - best):
        fail(f"test loss {trained:.4f} after training, untrained {untrained:.4f}, the true map's {best:.4f}: "
             f"the model did not learn")
    print(f"torchscript_loss_test: 3 workers == 1 worker: train loss {one['epochs'][-1]['train_loss']:.6f} vs "
          f"{three['epochs'][-1]['train_loss']:.6f}, test loss {trained:.6f} (untrained {untrained:.4f}, "
          f"true map {best:.4f})")


def bad_inputs(a, data):
    cases = [
        ("persample.pt", [], DATA, "loss(output, target) returns a tensor of shape [2, 1], expected a scalar"),
        ("oneargument.pt", [], DATA, "loss(output, target) fails on a batch of 2"),
        ("targetsonly.pt", [], DATA, "loss(output, target) does not depend on the output"),
        ("huber.pt", ["--loss", "mse"], USAGE, "--loss mse cannot be used with"),
    ]
    for name, extra, code, text in cases:
        cmd = [a.hetrain, "run", "-n", "2", "--threads", "1", "--quiet", "--data", data, "--model",
               os.path.join(a.work, name), "-b", "32", "--max-steps", "2"] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        lines = p.stderr.splitlines()
        if p.returncode != code or len(lines) != 1 or text not in lines[0]:
            fail(f"{name} {extra}: exit {p.returncode} (want {code}), stderr {p.stderr!r} (want one line with "
                 f"{text!r})")
        print(f"torchscript_loss_test: {name} {' '.join(extra)}: {lines[0]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--torch-python", default="/usr/bin/python3",
                    help="a Python with Debian's python3-torch (the same libtorch as hetrain)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, "data")
    os.makedirs(data, exist_ok=True)
    write_data(data)
    # torch.jit.script reads the classes' source: from a file, not from -c.
    export = os.path.join(a.work, "export_models.py")
    open(export, "w").write(MODELS)
    p = subprocess.run([a.torch_python, export, a.work, str(INPUTS)], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"exporting the models with {a.torch_python} (python3-torch): {p.stderr.strip()[-1000:]}")
    model = os.path.join(a.work, "huber.pt")
    p = subprocess.run([a.torch_python, "-c", REFERENCE, model, data], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"the reference losses: {p.stderr.strip()[-1000:]}")
    ref = json.loads(p.stdout)
    loss_is_the_models(a, data, model, ref)
    same_maths(a, data, model, ref)
    bad_inputs(a, data)
    print("torchscript_loss_test: ok")


if __name__ == "__main__":
    main()
