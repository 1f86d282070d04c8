#!/usr/bin/env python3
"""Bring your own data: a regression set written with NumPy, trained by hetrain with --loss mse.

Writes DIR/train_x.npy, train_y.npy, test_x.npy, test_y.npy (y = sin(x . w) + a quadratic term + noise, 16
float32 features), trains an MLP on 3 local workers with the adaptive split, and prints the test RMSE next to
the best a constant predictor can do (the test targets' standard deviation). hetrain memory-maps the files:
each worker reads only the rows of its own slices.

Usage (Debian: apt-get install python3-numpy):
  /usr/bin/python3 examples/npy_regression.py --hetrain build/hetrain [--work /tmp/npy-regression]
Exit 0 when the model beats the constant predictor by at least 2x (CTest runs it: example_npy_regression).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

FEATURES = 16
TRAIN, TEST = 4096, 1024
MIN_GAIN = 2.0  # the model's RMSE must be at most half the constant predictor's


def write_data(work, seed=7):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=FEATURES) / np.sqrt(FEATURES)
    for split, n in (("train", TRAIN), ("test", TEST)):
        x = rng.normal(size=(n, FEATURES)).astype(np.float32)
        y = np.sin(2.0 * x @ w) + 0.3 * x[:, 0] ** 2 + 0.05 * rng.normal(size=n)
        np.save(os.path.join(work, f"{split}_x.npy"), x)
        np.save(os.path.join(work, f"{split}_y.npy"), y.astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetrain", default="build/hetrain")
    ap.add_argument("--work", default="/tmp/hetrain-npy-regression")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    write_data(a.work)
    metrics = os.path.join(a.work, "metrics.json")
    cmd = [a.hetrain, "run", "-n", "3", "--data", a.work, "--model", "mlp", "--loss", "mse", "-b", "64",
           "--epochs", "15", "--policy", "adaptive", "--eval-every", "50", "--threads", "1", "--metrics", metrics]
    print("+", " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        sys.exit("npy_regression: training failed")
    d = json.load(open(metrics))
    rmse = d["epochs"][-1]["test_rmse"]
    constant = float(np.load(os.path.join(a.work, "test_y.npy")).astype(np.float64).std())
    print(f"npy_regression: test RMSE {rmse:.4f}; a constant predictor's best {constant:.4f} "
          f"({constant / rmse:.1f}x worse)")
    if not rmse * MIN_GAIN <= constant:
        sys.exit(f"npy_regression: the model is not {MIN_GAIN}x better than a constant")


if __name__ == "__main__":
    main()
