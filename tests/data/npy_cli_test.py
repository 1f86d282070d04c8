#!/usr/bin/env python3
"""`hetrain run` on .npy files written by NumPy (tests/data/make_npy_fixtures.py), end to end.

1. Every bad input of docs/errors.md's .npy table: one line naming the file and the problem, the exit code.
2. Regression with --loss mse: the test RMSE falls below a threshold no constant predictor can reach (a
   constant's best test RMSE is the test targets' standard deviation).
3. N workers == 1 worker on .npy data (an uneven static split; the prefetcher in the loop).
4. Classification (uint8 images, int64 labels; accuracy), multi-label without test files (float16 inputs,
   bce-with-logits: no metric), and a TorchScript model whose input is not 784 values.
5. Multi-label that learns: with test files, every label's accuracy clearly above its majority-label baseline
   (the constant guess, computed from the test labels). hetrain reports the mean over labels, A; a label at
   accuracy a_j leaves the mean at most (k - 1 + a_j) / k, so a_j >= k A - (k - 1): the test requires that
   bound above each label's baseline by LABEL_MARGIN.
Usage: npy_cli_test.py --hetrain BIN --fixtures DIR --work DIR [--torch-python PY]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

USAGE, DATA = 2, 3
RMSE_FRACTION = 0.25       # the trained model must beat the best constant predictor by 4x
MIN_CLASS_ACCURACY = 0.9   # 4 well-separated classes
EQUAL_RELATIVE = 1e-4      # float summation order differs per split
LABEL_MARGIN = 0.1         # each label's accuracy bound over its constant guess (base rates 0.5, 0.3, 0.2)

# (name, extra flags, exit code, text the one line must hold); {f} is the fixtures directory.
BAD = [
    ("truncated file", ["--train-x", "{f}/bad/truncated.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "truncated.npy: truncated: the header's shape (100, 4) of float32 needs 1600 data bytes, the file has 1500"),
    ("wrong magic", ["--train-x", "{f}/bad/magic.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "magic.npy: not a .npy file (wrong magic"),
    ("Fortran order", ["--train-x", "{f}/bad/fortran.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "fortran.npy: Fortran-order array is not supported"),
    ("unsupported dtype", ["--train-x", "{f}/bad/float64.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "float64.npy: unsupported dtype '<f8' (float64)"),
    ("big-endian dtype", ["--train-x", "{f}/bad/bigendian.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "bigendian.npy: big-endian dtype '>f4' is not supported"),
    ("header lies about the shape", ["--train-x", "{f}/bad/lying.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "lying.npy: header does not match the data: the header's shape (50, 4) of float32 needs 800 data bytes, "
     "the file has 1600"),
    ("unknown format version", ["--train-x", "{f}/bad/version9.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "version9.npy: unsupported .npy version 9.0"),
    ("row counts differ", ["--train-x", "{f}/bad/x100.npy", "--train-y", "{f}/bad/y99.npy"], DATA,
     "x100.npy has 100 rows but"),
    ("label out of range", ["--train-x", "{f}/bad/x100.npy", "--train-y", "{f}/bad/negative.npy"], DATA,
     "negative.npy: label -1 at row 7 is out of range"),
    ("test label beyond the training classes",
     ["--train-x", "{f}/bad/x100.npy", "--train-y", "{f}/bad/labels.npy", "--test-x", "{f}/bad/x100.npy",
      "--test-y", "{f}/bad/test_y_big.npy"], DATA, "test_y_big.npy: label 3 at row 5 is out of range"),
    ("test_x.npy without test_y.npy", ["--data", "{f}/bad/half"], DATA,
     "half: has test_x.npy but not test_y.npy"),
    ("missing file", ["--train-x", "{f}/bad/nope.npy", "--train-y", "{f}/bad/y100.npy"], DATA,
     "nope.npy: cannot open: No such file or directory"),
    ("cross-entropy on float targets", ["--data", "{f}/reg", "--loss", "cross-entropy"], USAGE,
     "--loss cross-entropy needs integer class labels"),
    ("unknown loss", ["--data", "{f}/reg", "--loss", "hinge"], USAGE, "unknown --loss 'hinge'"),
    ("inputs without targets", ["--train-x", "{f}/reg/train_x.npy"], USAGE,
     "with .npy files give --train-x and --train-y"),
    ("cnn on vector rows", ["--data", "{f}/reg", "--model", "cnn"], USAGE,
     "model cnn needs inputs of shape (N, rows, cols)"),
]

SCRIPT = """
import sys, torch
# 6x6 rows in, 4 classes out: scripted from modules (torch.jit.script needs a
# class's source file, which python -c has not).
torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 4))).save(sys.argv[1])
"""

def fail(msg):
    print(f"npy_cli_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(a, flags, n=1):
    cmd = [a.hetrain, "run", "-n", str(n), "--threads", "1", "--quiet"] + flags
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def train(a, name, flags, n=1):
    metrics = os.path.join(a.work, name + ".json")
    p = run(a, flags + ["--metrics", metrics], n)
    if p.returncode != 0:
        fail(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
    return json.load(open(metrics))


def bad_inputs(a):
    for name, flags, code, text in BAD:
        model = [] if "--model" in flags else ["--model", "mlp"]
        p = run(a, model + [x.format(f=a.fixtures) for x in flags])
        lines = p.stderr.splitlines()
        if p.returncode != code or len(lines) != 1 or text not in lines[0] \
                or not lines[0].startswith("hetrain: error: "):
            fail(f"{name}: exit {p.returncode} (want {code}), stderr {p.stderr!r} (want one line with {text!r})")
    print(f"npy_cli_test: {len(BAD)} bad inputs: one line each, the right exit code")


def regression(a):
    f = a.fixtures
    d = train(a, "reg", ["--data", f"{f}/reg", "--model", "mlp", "--loss", "mse", "-b", "32", "--epochs", "12",
                         "--eval-every", "40"], n=2)
    test_y = np.load(f"{f}/reg/test_y.npy").astype(np.float64)
    constant = float(test_y.std())  # the best constant predictor's RMSE: predict the mean
    rmse = d["epochs"][-1]["test_rmse"]
    if d["loss"] != "mse" or d["metric"] != "rmse":
        fail(f"regression metrics name loss {d['loss']!r}, metric {d['metric']!r}")
    if not rmse < RMSE_FRACTION * constant:
        fail(f"test RMSE {rmse:.4f}: not below {RMSE_FRACTION} x {constant:.4f} (a constant predictor's best)")
    if len(d["evals"]) < 4 or "test_rmse" not in d["evals"][0]:
        fail(f"--eval-every 40 over 192 steps gave evals {d['evals']}")
    print(f"npy_cli_test: regression: test RMSE {rmse:.4f}, best constant {constant:.4f}")


def equivalence(a):
    f = a.fixtures
    base = ["--data", f"{f}/reg", "--model", "mlp", "--optimizer", "sgd", "--lr", "0.01", "-b", "64",
            "--max-steps", "12", "--epochs", "2", "--seed", "3"]
    one = train(a, "eq1", base)
    three = train(a, "eq3", base + ["--policy", "static", "--shares", "5,17,42"], n=3)
    x, y = one["epochs"][-1]["test_rmse"], three["epochs"][-1]["test_rmse"]
    if abs(x - y) > EQUAL_RELATIVE * abs(x):
        fail(f"1 worker: test RMSE {x!r}, 3 workers split 5/17/42: {y!r}")
    print(f"npy_cli_test: 3 workers == 1 worker on .npy (test RMSE {x:.6f} vs {y:.6f})")


def other_tasks(a):
    f = a.fixtures
    d = train(a, "cls", ["--data", f"{f}/cls", "--model", "cnn", "-b", "32", "--epochs", "4"], n=2)
    acc = d["epochs"][-1]["test_accuracy"]
    if d["loss"] != "cross-entropy" or acc < MIN_CLASS_ACCURACY:
        fail(f"classification: loss {d['loss']!r}, test accuracy {acc}")
    d = train(a, "multi", ["--data", f"{f}/multi", "--model", "mlp", "--loss", "bce-with-logits", "-b", "30"])
    if d["loss"] != "bce-with-logits" or d["metric"] != "" or "test_label_accuracy" in d["epochs"][0]:
        fail(f"multi-label without test files: loss {d['loss']!r}, metric {d['metric']!r}, {d['epochs']}")
    model = os.path.join(a.work, "m36.pt")
    p = subprocess.run([a.torch_python, "-c", SCRIPT, model], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"exporting a TorchScript model with {a.torch_python} (python3-torch): {p.stderr.strip()[-500:]}")
    d = train(a, "script", ["--data", f"{f}/cls", "--model", model, "-b", "32", "--epochs", "15", "--lr", "0.02"])
    acc2 = d["epochs"][-1]["test_accuracy"]
    if acc2 < MIN_CLASS_ACCURACY:
        fail(f"TorchScript model on 6x6 .npy rows: test accuracy {acc2}")
    print(f"npy_cli_test: classification {acc:.3f}, multi-label ran, TorchScript 36-input model {acc2:.3f}")


def multi_label_learns(a):
    f = a.fixtures
    d = train(a, "multi_eval", ["--data", f"{f}/multi_eval", "--model", "mlp", "--loss", "bce-with-logits",
                                "-b", "50", "--epochs", "8", "--lr", "0.01"], n=2)
    test_y = np.load(f"{f}/multi_eval/test_y.npy")
    k = test_y.shape[1]
    rate = test_y.mean(axis=0)
    baseline = np.maximum(rate, 1 - rate)  # the majority guess per label
    if d["metric"] != "label_accuracy" or "test_label_accuracy" not in d["epochs"][-1]:
        fail(f"multi-label with test files: metric {d['metric']!r}, epochs {d['epochs'][-1]}")
    mean = d["epochs"][-1]["test_label_accuracy"]
    bound = k * mean - (k - 1)  # the least any one label's accuracy can be
    worst = int(np.argmax(baseline))
    if not bound > baseline[worst] + LABEL_MARGIN:
        fail(f"multi-label: mean per-label test accuracy {mean:.4f} bounds each label's at {bound:.4f}, not "
             f"{LABEL_MARGIN} above label {worst}'s majority baseline {baseline[worst]:.4f} "
             f"(baselines {np.round(baseline, 4).tolist()})")
    print(f"npy_cli_test: multi-label learns: mean per-label test accuracy {mean:.4f}, so every label at least "
          f"{bound:.4f}; majority baselines {np.round(baseline, 4).tolist()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    bad_inputs(a)
    regression(a)
    equivalence(a)
    other_tasks(a)
    multi_label_learns(a)
    print("npy_cli_test: ok")


if __name__ == "__main__":
    main()
